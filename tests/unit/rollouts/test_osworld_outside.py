"""How an outside agent's episode becomes a rollout (`rollouts.osworld_outside`): the
hand-over between the agent's calls and the harness's rollout, on a stand-in for the
environment (the real one is driven in tests/integration/harness)."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cleanroom.core.breakage import Breakage
from cleanroom.core.outcomes import Cause, Outcome, Reason, Status
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.environments.errors import (
    BadAction,
    DisplayHeld,
    EnvironmentBroken,
    UnknownEnvironment,
)
from cleanroom.environments.memory import MemoryDesktops
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.policy.http import KEY_HEADER, env_key
from cleanroom.rollouts import osworld_outside
from cleanroom.rollouts.base import RolloutContext
from cleanroom.rollouts.osworld_desktop_env import InvalidEvaluation, NoTask
from cleanroom.rollouts.osworld_http import build_osworld_app
from cleanroom.rollouts.osworld_outside import (
    CONNECTION_FILE,
    NoEpisode,
    NotOpen,
    OutsideAgents,
    write_connection,
)
from cleanroom.rollouts.osworld_vm_server import build_vm_server_app
from cleanroom.rollouts.smoke_rollout import attempt_rollout
from cleanroom.verifiers.osworld.task import TaskFileError

TASK = {"id": "task-1", "instruction": "do it", "evaluator": {"func": "x"}}


def _pool() -> MemoryDesktops:
    """The canary, env01 and env02, in memory."""
    pool = MemoryDesktops(Path(tempfile.mkdtemp(prefix="cleanroom-outside-")), envs=2)
    pool.start()
    return pool


class _Recorder:
    running = True

    def stop(self) -> list[bytes]:
        self.running = False
        return [b"frame"]


class _Controller:
    """Stands in for `EnvironmentController`: what OSWorld's in-VM server calls."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.recorder = _Recorder()

    def execute(self, command: Any, shell: bool = False) -> dict[str, Any]:
        return {"status": "success", "output": self.name, "error": "", "returncode": 0}

    def end_recording_bytes(self) -> bytes:
        return f"recording of {self.name}".encode()


class _Env:
    """Stands in for `OSWorldDesktopEnv`: counts steps, scores what it is told to."""

    score: float | Exception = 1.0
    step_error: Exception | None = None

    def __init__(self, handle: Any, action_space: str = "", **_: Any) -> None:
        self.task: dict[str, Any] | None = None
        self.steps: list[Any] = []
        self.action_space = action_space
        self.controller = _Controller(f"{handle.env} generation {handle.generation}")

    def begin(self, task_config: dict[str, Any] | None) -> dict[str, Any]:
        if task_config is not None and "evaluator" not in task_config:
            raise TaskFileError(Path("<task>"), "missing 'evaluator'")
        self.task = task_config
        return {"screenshot": b"png", "instruction": "do it"}

    def step(self, action: Any, pause: float = 0) -> tuple[dict[str, Any], float, bool, dict]:
        if _Env.step_error is not None:
            raise _Env.step_error
        self.steps.append(action)
        return {"screenshot": b"png"}, 0.0, action == "DONE", {}

    def evaluate(self) -> float:
        if self.task is None:
            raise NoTask("no task")
        if isinstance(_Env.score, Exception):
            raise _Env.score
        return _Env.score


@pytest.fixture(autouse=True)
def _stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(osworld_outside, "OSWorldDesktopEnv", _Env)
    _Env.score, _Env.step_error = 1.0, None


def _agents(**kw: Any) -> OutsideAgents:
    settings = {"wait_s": 5.0, "episode_s": 5.0, "reset_wait_s": 5.0, **kw}
    return OutsideAgents(_pool(), **settings)


def _ctx(env: str = "env01", seq: int = 1) -> RolloutContext:
    handle = LocalHandle.__new__(LocalHandle)
    handle.env, handle.generation = env, 1
    token = mint(RolloutId(env, 1, seq))
    return RolloutContext(token, env, handle, Path("."), lambda e, u: None, lambda: Path("."))


class _Caller(threading.Thread):
    """An agent's call in a thread of its own, as the HTTP server makes it."""

    def __init__(self, call: Any, *args: Any) -> None:
        super().__init__(daemon=True)
        self.call, self.args = call, args
        self.result: Any = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.result = self.call(*self.args)
        except BaseException as exc:
            self.error = exc

    def outcome(self) -> Any:
        self.join(10)
        assert not self.is_alive()
        if self.error is not None:
            raise self.error
        return self.result


def _rollout(agents: OutsideAgents, env: str = "env01") -> _Caller:
    """The harness's side: the gate, then the rollout (in a thread), then the release."""
    release = agents.gate(env)
    assert release is not None

    def rollout() -> Outcome:
        try:
            return attempt_rollout(agents.task(), _ctx(env))
        finally:
            release()

    return _Caller(rollout)


def test_each_episode_takes_the_action_space_its_agent_resets_with() -> None:
    agents = _agents(action_space="pyautogui")
    claude = _Caller(agents.reset, "env01", TASK, "claude_computer_use")
    plain = _Caller(agents.reset, "env02", TASK)
    rollouts = [_rollout(agents, "env01"), _rollout(agents, "env02")]
    claude.outcome(), plain.outcome()
    spaces = {n: agents._slots[n].episode.env.action_space for n in ("env01", "env02")}  # type: ignore[union-attr]
    assert spaces == {"env01": "claude_computer_use", "env02": "pyautogui"}
    agents.evaluate("env01"), agents.evaluate("env02")
    for r in rollouts:
        r.outcome()


def test_a_reset_with_an_unknown_action_space_is_refused_before_it_waits() -> None:
    agents = _agents(reset_wait_s=60)
    with pytest.raises(BadAction, match="action_space"):
        agents.reset("env01", TASK, "voice")


def _vm_server(agents: OutsideAgents) -> TestClient:
    app = build_vm_server_app(agents.controller, "harness-key", episode_over=agents.episode_over)  # type: ignore[arg-type]
    return TestClient(app, base_url="http://127.0.50.1:5000")


def _env01_vm(path: str, client: TestClient) -> Any:
    return client.post(
        path, json={"command": ["true"]}, auth=("env01", env_key("harness-key", "env01"))
    )


def test_the_in_vm_server_answers_for_the_running_episode_only() -> None:
    agents = _agents()
    with _vm_server(agents) as vm:
        assert _env01_vm("/execute", vm).status_code == 401  # no episode yet: nothing served
        reset = _Caller(agents.reset, "env01", TASK)
        rollout = _rollout(agents)
        reset.outcome()
        ran = _env01_vm("/execute", vm)
        assert (ran.status_code, ran.json()["output"]) == (200, "env01 generation 1")
        agents.evaluate("env01")
        rollout.outcome()
        # Over (the window's trials may run there now): only the recording is ended.
        over = _env01_vm("/execute", vm)
        assert (over.status_code, over.json()["error"]) == (409, "episode_over")
        recording = _env01_vm("/end_recording", vm)
        assert (recording.status_code, recording.content) == (
            200,
            b"recording of env01 generation 1",
        )
    assert agents.controller("env00") is None and agents.controller("env02") is None


def test_a_recording_the_agent_never_ended_stops_when_its_next_episode_opens() -> None:
    agents = _agents()
    first = _Caller(agents.reset, "env01", TASK)
    _rollout(agents)
    first.outcome()
    before = agents.controller("env01")
    second = _Caller(agents.reset, "env01", TASK)  # ends the first episode
    _rollout(agents)
    second.outcome()
    assert before is not None and not before.recorder.running
    assert agents.controller("env01") is not before


def test_over_http_evaluate_answers_the_score_and_the_outcome() -> None:
    agents = _agents()
    app = build_osworld_app(agents, "harness-key")
    mine = {KEY_HEADER: f"Bearer {env_key('harness-key', 'env01')}"}
    with TestClient(app) as client:
        body = {"task_config": TASK}
        reset = _Caller(lambda: client.post("/v1/osworld/env01/reset", json=body, headers=mine))
        rollout = _rollout(agents)
        assert reset.outcome().status_code == 200
        answer = client.post("/v1/osworld/env01/evaluate", json={}, headers=mine).json()
        rollout.outcome()
    assert answer["score"] == 1.0
    outcome = Outcome.from_json(answer["outcome"])
    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)
    assert outcome.details == {"task": "task-1", "ended": "evaluated"}


def test_no_agent_no_rollout_and_no_rollout_no_reset() -> None:
    agents = _agents(wait_s=0.2, reset_wait_s=0.2)
    assert agents.gate("env01") is None
    with pytest.raises(NotOpen):
        agents.reset("env01", TASK)
    with pytest.raises(NoEpisode):
        agents.step("env01", "DONE", 0)
    with pytest.raises(NoEpisode):
        agents.evaluate("env01")
    with pytest.raises(UnknownEnvironment):
        agents.check("env09")


def test_an_episode_from_reset_to_evaluate_is_one_scored_rollout() -> None:
    agents = _agents()
    reset = _Caller(agents.reset, "env01", TASK)
    rollout = _rollout(agents)
    assert reset.outcome()["instruction"] == "do it"
    assert agents.step("env01", "pyautogui.press('a')", 0)[2] is False
    assert agents.evaluate("env01").score == 1.0
    outcome: Outcome = rollout.outcome()
    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)
    assert outcome.details == {"task": "task-1", "ended": "evaluated"}
    # The episode is over: its steps are refused.
    with pytest.raises(NoEpisode):
        agents.step("env01", "DONE", 0)


def test_an_agent_that_stalls_is_scored_as_it_is_when_its_time_is_up() -> None:
    agents = _agents(episode_s=0.5)
    _Env.score = 0.0
    reset = _Caller(agents.reset, "env01", TASK)
    rollout = _rollout(agents)
    reset.outcome()
    outcome: Outcome = rollout.outcome()
    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)
    assert "ran out of its 0.5 s" in outcome.details["ended"]


def test_a_second_reset_ends_the_episode_and_waits_for_the_next_rollout() -> None:
    agents = _agents()
    first = _Caller(agents.reset, "env01", TASK)
    rollout = _rollout(agents)
    first.outcome()
    second = _Caller(agents.reset, "env01", TASK)
    outcome: Outcome = rollout.outcome()
    assert outcome.details["ended"] == "the agent reset before evaluating"
    assert second.is_alive()  # it waits for the harness's next rollout
    _rollout(agents)
    assert second.outcome()["instruction"] == "do it"


def test_an_invalid_evaluation_reaches_the_agent_as_invalid_never_a_score() -> None:
    agents = _agents()
    invalid = Outcome.invalid(Reason.CHECKER_ERROR, "a getter could not run")
    _Env.score = InvalidEvaluation(invalid)
    reset = _Caller(agents.reset, "env01", TASK)
    rollout = _rollout(agents)
    reset.outcome()
    with pytest.raises(InvalidEvaluation):
        agents.evaluate("env01")
    assert rollout.outcome() == invalid


def test_an_environment_the_agent_broke_is_its_zero_and_the_agent_is_told_so() -> None:
    agents = _agents()
    reset = _Caller(agents.reset, "env01", TASK)
    rollout = _rollout(agents)
    reset.outcome()
    _Env.step_error = EnvironmentBroken("env01", 1, Breakage(Cause.AGENT, "writer is dead"))
    with pytest.raises(EnvironmentBroken):
        agents.step("env01", "pyautogui.hotkey('ctrl', 'q')", 0)
    outcome: Outcome = rollout.outcome()
    assert (outcome.status, outcome.reason) == (Status.FAILURE, Reason.ENVIRONMENT_BROKEN)


def test_a_display_its_own_client_held_under_a_step_is_the_agents_zero() -> None:
    agents = _agents()
    reset = _Caller(agents.reset, "env01", TASK)
    rollout = _rollout(agents)
    reset.outcome()
    _Env.step_error = DisplayHeld("env01", "a screenshot", 321, 20)
    with pytest.raises(DisplayHeld):
        agents.step("env01", "pyautogui.press('a')", 0)
    outcome: Outcome = rollout.outcome()
    assert (outcome.status, outcome.score, outcome.reason) == (
        Status.FAILURE,
        0.0,
        Reason.DISPLAY_HELD,
    )
    assert outcome.details["server_pid"] == 321


def test_a_malformed_task_config_is_the_agents_zero() -> None:
    agents = _agents()
    reset = _Caller(agents.reset, "env01", {"id": "no-evaluator"})
    rollout = _rollout(agents)
    with pytest.raises(BadAction, match="evaluator"):
        reset.outcome()
    outcome: Outcome = rollout.outcome()
    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)


def test_each_environment_has_its_own_episode() -> None:
    agents = _agents()
    one, two = _Caller(agents.reset, "env01", TASK), _Caller(agents.reset, "env02", TASK)
    r1, r2 = _rollout(agents, "env01"), _rollout(agents, "env02")
    one.outcome(), two.outcome()
    _Env.score = 1.0
    assert agents.evaluate("env02").score == 1.0
    assert r2.outcome().status is Status.SUCCESS
    assert r1.is_alive()  # env01's agent has not finished
    agents.evaluate("env01")
    assert r1.outcome().status is Status.SUCCESS


def test_the_connection_file_holds_each_environments_own_key_for_its_owner_only(
    tmp_path: Path,
) -> None:
    path = write_connection(tmp_path, "http://127.0.0.1:1", "harness-key", ["env01", "env02"])
    assert path.name == CONNECTION_FILE and path.stat().st_mode & 0o777 == 0o600
    text = path.read_text()
    assert "harness-key" not in text and '"env01"' in text
    with pytest.raises(FileExistsError):  # never written over, nor through a link
        write_connection(tmp_path, "http://127.0.0.1:1", "k", ["env01"])


def test_over_http_a_reset_with_no_rollout_is_not_open_and_a_step_with_no_episode_409() -> None:
    app = build_osworld_app(_agents(reset_wait_s=0.2), "harness-key")
    mine = {KEY_HEADER: f"Bearer {env_key('harness-key', 'env01')}"}
    with TestClient(app) as client:
        reset = client.post("/v1/osworld/env01/reset", json={"task_config": TASK}, headers=mine)
        assert (reset.status_code, reset.json()["error"]) == (503, "not_open")
        step = client.post("/v1/osworld/env01/step", json={"action": "DONE"}, headers=mine)
        assert (step.status_code, step.json()["error"]) == (409, "no_episode")
        other = client.post("/v1/osworld/env02/step", json={"action": "DONE"}, headers=mine)
        assert other.status_code == 401
        unknown = client.post(
            "/v1/osworld/env09/step",
            json={"action": "DONE"},
            headers={KEY_HEADER: "Bearer harness-key"},
        )
        assert unknown.status_code == 404


def test_a_fault_of_the_infrastructure_under_a_step_makes_the_rollout_invalid() -> None:
    agents = _agents()
    reset = _Caller(agents.reset, "env01", TASK)
    rollout = _rollout(agents)
    reset.outcome()
    _Env.step_error = RuntimeError("the guest could not start the code")
    with pytest.raises(RuntimeError):
        agents.step("env01", "pyautogui.press('a')", 0)
    outcome: Outcome = rollout.outcome()
    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.ENVIRONMENT_ERROR)
    assert "could not start the code" in outcome.detail


def test_a_reset_the_harness_claimed_but_could_not_open_is_answered_not_open() -> None:
    agents = _agents(reset_wait_s=0.2)
    reset = _Caller(agents.reset, "env01", TASK)
    release = agents.gate("env01")
    assert release is not None
    time.sleep(0.5)  # past its own wait: claimed, so it waits for the harness
    assert reset.is_alive()
    release()  # the rollout ended before it took the reset (its reset failed, say)
    with pytest.raises(NotOpen, match="could not open"):
        reset.outcome()


def test_a_second_waiting_reset_takes_the_first_ones_place() -> None:
    agents = _agents()
    first = _Caller(agents.reset, "env01", TASK)
    release = agents.gate("env01")
    assert release is not None
    second = _Caller(agents.reset, "env01", {**TASK, "id": "task-2"})
    with pytest.raises(NotOpen, match="later reset"):
        first.outcome()
    rollout = _Caller(attempt_rollout, agents.task(), _ctx("env01"))
    assert second.outcome()["instruction"] == "do it"
    agents.evaluate("env01")
    assert rollout.outcome().details["task"] == "task-2"
    release()
