"""cleanroom's verl reward function and agent-loop hook, run through verl 0.9.1's own code
(in .venv-verl; see `verl_driver`) on real containers of fix-median's image.

The harness here is the test: it starts the task's image as plain containers with
cleanroom's Docker layer and lets a scripted agent act in each (the oracle; a planter
that leaves a process rewriting the reward), then hands the containers to verl. A
reward function that trusts the container's reward file is the naive baseline: it
scores the planter 1. cleanroom's must score the oracle 1 and the planter 0 with its
reason, and an infrastructure fault (a container lost before scoring) must leave the
session out of the batch the v1 trainer samples, never a 0.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import load_task

from ...docs_examples import doc_block
from ..acted_containers import ORACLE, PLANTER, act_in, start_container

pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.integrations,
    pytest.mark.timeout(600),
]

REPO = Path(__file__).resolve().parents[3]
HERE = Path(__file__).parent
PYTHON = REPO / ".venv-verl" / "bin" / "python"
TASK = REPO / "examples" / "tasks" / "fix-median"
# The overrides docs/integrations/verl.md gives verl's trainer; the driver names the
# function `compute_score`, as they do.
OVERRIDES = dict(
    line.split("=", 1)
    for line in doc_block("docs/integrations/verl.md", "The reward function").text.split()
)
CLEANROOM_FUNCTION = OVERRIDES["reward.custom_reward_function.path"]
NAIVE_FUNCTION = str(HERE / "naive_reward.py")
LOST = "the container of an agent that ran, removed before it was scored"
# The per-sample columns cleanroom's reward adds beside ``score``.
TAMPER = "cleanroom/agent_caused/tamper"

# Starts an agent container running ``script`` and gives its name; LOST gives the name
# of one that existed and is gone.
Act = Callable[[str], str]


def verl(request: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """Run `verl_driver` with ``request`` in .venv-verl; its result."""
    if not PYTHON.is_file():
        pytest.fail(
            "no .venv-verl with verl 0.9.1: run `make test-integrations` (it makes the venv)",
            pytrace=False,
        )
    path = tmp_path / f"{request['run']}-request.json"
    path.write_text(json.dumps(request))
    result = tmp_path / f"{request['run']}-result.json"
    env = {
        **os.environ,
        # The driver's helpers from this folder, cleanroom from this checkout's sources.
        "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO / "src")]),
        "PYTHONWARNINGS": "ignore",
    }
    argv = [str(PYTHON), str(HERE / "verl_driver.py"), str(path), str(result)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    found: dict[str, Any] = json.loads(result.read_text())
    return found


def target(container: str) -> dict[str, Any]:
    """The ``extra_info`` that sends cleanroom's reward function to ``container``."""
    return {"cleanroom": {"task_dir": str(TASK), "container": container}}


@pytest.fixture(scope="module")
def act(runtime: DockerRuntime) -> Iterator[Act]:
    """Start fix-median's image as another harness would, run a script in it as the
    agent, and give the container's name."""
    task = load_task(TASK)
    started: list[str] = []

    def run(script: str) -> str:
        ident, name = start_container(runtime, task)
        started.append(ident)
        if script == LOST:
            runtime.containers.remove(ident)
        else:
            act_in(runtime, task, ident, script)
        return name

    yield run
    for ident in started:
        runtime.containers.remove(ident)


# --- verl's reward manager with cleanroom's compute_score -------------------------------


@pytest.fixture(scope="module")
def scored(act: Act, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """One batch of three rollouts (the oracle, the planter, a lost container) scored by
    verl's reward manager loaded from a config naming cleanroom's compute_score."""
    names = {"oracle": ORACLE, "planter": PLANTER, "lost": LOST}
    samples = {label: target(act(script)) for label, script in names.items()}
    request = {"run": "reward-manager", "function": CLEANROOM_FUNCTION}
    result = verl({**request, "samples": list(samples.values())}, tmp_path_factory.mktemp("verl"))
    assert result["manager"] == "NaiveRewardManager"
    return dict(zip(samples, result["samples"], strict=True))


def test_the_oracle_scores_one(scored: dict[str, dict[str, Any]]) -> None:
    oracle = scored["oracle"]
    assert oracle["reward_score"] == 1.0, oracle
    assert oracle["reward_extra_info"]["cleanroom/success"] == 1.0


def test_the_planted_reward_scores_the_agent_s_zero_with_its_reason(
    scored: dict[str, dict[str, Any]],
) -> None:
    planter = scored["planter"]
    assert planter["reward_score"] == 0.0, planter
    assert planter["reward_extra_info"][TAMPER] == 1.0
    assert planter["reward_extra_info"]["cleanroom/agent_caused"] == 1.0


def test_every_sample_has_the_same_keys_and_none_is_acc(
    scored: dict[str, dict[str, Any]],
) -> None:
    """verl builds a batch's columns from its first sample's keys; ``acc`` would count a
    left-out session as 0 in validation."""
    oracle, planter = scored["oracle"]["reward_extra_info"], scored["planter"]["reward_extra_info"]
    assert sorted(oracle) == sorted(planter)
    assert "acc" not in oracle
    assert all(isinstance(value, float) for value in oracle.values())


def test_summing_a_column_over_the_batch_gives_the_batch_s_count(
    scored: dict[str, dict[str, Any]],
) -> None:
    rows = [scored["oracle"]["reward_extra_info"], scored["planter"]["reward_extra_info"]]
    totals = {key: sum(row[key] for row in rows) for key in rows[0]}
    assert totals["cleanroom/scored"] == 2.0
    assert totals["cleanroom/success"] == 1.0
    assert totals["cleanroom/failure"] == 1.0
    assert totals[TAMPER] == 1.0


def test_a_lost_container_raises_instead_of_scoring(scored: dict[str, dict[str, Any]]) -> None:
    lost = scored["lost"]
    assert "reward_score" not in lost, lost
    assert lost["raised"] == "VerifierUnavailableError"
    assert (lost["outcome"]["outcome"], lost["outcome"]["reason"]) == (
        "invalid",
        "verifier_unavailable",
    )


def test_the_naive_reward_function_is_fooled_by_the_planted_reward(
    act: Act, tmp_path: Path
) -> None:
    """The control: the same attack, through the same reward manager, read naively."""
    request = {"run": "reward-manager", "function": NAIVE_FUNCTION}
    result = verl({**request, "samples": [target(act(PLANTER))]}, tmp_path)
    (planter,) = result["samples"]
    assert planter["reward_score"] == 1.0, planter  # the task was never done


# --- the v1 trainer's rollout: sessions, reward loop, replay buffer ---------------------


def test_a_session_whose_container_was_lost_is_left_out_of_the_batch(
    act: Act, tmp_path: Path
) -> None:
    """A group of two sessions handing their containers to the reward loop: the lost
    one raises in cleanroom's compute_score, verl fails that session and samples the
    group with the oracle's session alone."""
    request = {
        "run": "v1-group",
        "scoring": "hand-over",
        "task_dir": str(TASK),
        "containers": [act(ORACLE), act(LOST)],
    }
    result = verl(request, tmp_path)
    assert result["group_status"] == "failure"
    assert result["sampled"] == ["p_0_0"]  # session 1 is absent: no row, no 0
    oracle = result["rows"]["p_0_0"]
    assert oracle["rm_scores"][-1] == 1.0
    assert oracle["reward_extra_info"]["cleanroom/success"] == 1.0
    (error,) = result["session_errors"]
    assert error["raised"] == "VerifierUnavailableError"


def test_the_agent_loop_hook_scores_each_session_and_a_lost_one_is_left_out(
    act: Act, tmp_path: Path
) -> None:
    """A group of three sessions whose agent loop verifies its own container: the
    oracle's 1 and the planter's 0 reach the batch as verl's scores, with the counts and
    the outcome beside them; the lost container's session raises from the agent loop
    and is absent."""
    request = {
        "run": "v1-group",
        "scoring": "hook",
        "task_dir": str(TASK),
        "containers": [act(ORACLE), act(PLANTER), act(LOST)],
    }
    result = verl(request, tmp_path)
    assert result["group_status"] == "failure"
    assert sorted(result["sampled"]) == ["p_0_0", "p_1_0"]
    oracle, planter = result["rows"]["p_0_0"], result["rows"]["p_1_0"]
    assert oracle["rm_scores"][-1] == 1.0
    assert planter["rm_scores"][-1] == 0.0
    assert planter["reward_extra_info"][TAMPER] == 1.0
    assert (planter["outcome"]["reason"], planter["outcome"]["caused_by"]) == ("tamper", "agent")
    assert planter["outcome"]["details"]["mode"] == "sealed"
    assert sorted(oracle["reward_extra_info"]) == sorted(planter["reward_extra_info"])
    (error,) = result["session_errors"]
    assert error["raised"] == "VerifierUnavailableError"


def test_the_documented_overrides_name_cleanroom_s_compute_score() -> None:
    assert OVERRIDES["reward.custom_reward_function.name"] == "compute_score"


def test_the_documented_agent_loop_registers_with_verl() -> None:
    """The page's agent loop, defined in .venv-verl: verl's registry has it by its name."""
    block = doc_block("docs/integrations/verl.md", "The agent-loop hook")
    script = (
        f"{block.text}\n"
        "from verl.experimental.agent_loop.agent_loop import _agent_loop_registry\n"
        "print(_agent_loop_registry['my_container_agent'])\n"
    )
    done = subprocess.run(
        [str(PYTHON), "-c", script],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "MyContainerAgentLoop" in done.stdout
