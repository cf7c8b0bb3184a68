"""Real `harbor run` (Harbor 0.26 in .venv-harbor, or the `harbor` that
`CLEANROOM_TEST_HARBOR` names; its docker environment, Docker Compose) with cleanroom's
verifier plugged in through Harbor's own hook.

The planting agent under Harbor's default verifier is the naive baseline: that verifier
removes a planted reward before the tests, but the agent's process rewrites it, and
Harbor scores the agent 1 for a task it never did. cleanroom's `SealedVerifier` must
score the same run 0 (the agent's tamper), still score the oracle 1, and hand an invalid
outcome to Harbor as an exception, with no reward.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.runtime.docker import DockerRuntime

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[3]
HARBOR = Path(os.environ.get("CLEANROOM_TEST_HARBOR") or REPO / ".venv-harbor" / "bin" / "harbor")
TASKS = REPO / "examples" / "tasks"
TASK = TASKS / "fix-median"
SEALED = "cleanroom.integrations.harbor:SealedVerifier"
PLANTING_AGENT = "harbor_agents:PlantingAgent"
HANGING_AGENT = "harbor_agents:HangingAgent"
WRONG_ANSWER_AGENT = "harbor_agents:WrongAnswerAgent"
# A plain `harbor run`: Harbor allows the verifier the task's own limit, so the pristine
# control runs beside the verification (see plan_budget).
SEALED_ARGS = ("--verifier", SEALED)


def harbor_run(
    runtime: DockerRuntime,
    jobs: Path,
    task: Path,
    agent: list[str],
    verifier: tuple[str, ...] = (),
    environment: str = "docker",
) -> dict[str, Any]:
    """One trial of ``task`` through `harbor run` in Harbor's ``environment``; its trial
    folder's result.json, with the trial folder itself under ``"trial_dir"``."""
    results = harbor_run_all(runtime, jobs, task, agent, verifier, environment=environment)
    assert len(results) == 1, f"expected one trial, found {sorted(results)}"
    return next(iter(results.values()))


def harbor_env(runtime: DockerRuntime) -> dict[str, str]:
    """The environment `harbor` runs in for these tests."""
    if not HARBOR.is_file():
        pytest.fail("no .venv-harbor with Harbor: run `make setup` (needs Python 3.12+)")
    return {
        **os.environ,
        # The agent of the tests' own is imported by Harbor from this folder, and
        # cleanroom from this checkout's sources, whatever .venv-harbor installed.
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(REPO / "src")]),
        # What cleanroom starts inside Harbor is removed with the test's runtime.
        "CLEANROOM_LABELS": ",".join(f"{k}={v}" for k, v in runtime.labels.items()),
        # Harbor's podman environment runs the podman-compose that .venv-harbor holds.
        "PATH": os.pathsep.join([str(HARBOR.parent), os.environ.get("PATH", "")]),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def harbor_run_all(
    runtime: DockerRuntime,
    jobs: Path,
    path: Path,
    agent: list[str],
    verifier: tuple[str, ...] = (),
    concurrent: int = 1,
    environment: str = "docker",
) -> dict[str, dict[str, Any]]:
    """A `harbor run` of a task or a dataset folder of tasks, ``concurrent`` trials at
    once; each trial's result.json by task name, with its trial folder under
    ``"trial_dir"``."""
    env = harbor_env(runtime)
    argv = [str(HARBOR), "run", "-p", str(path), "--env", environment, *agent, *verifier]
    argv += ["-o", str(jobs), "-n", str(concurrent), "-y"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results: dict[str, dict[str, Any]] = {}
    for found in jobs.glob("*/*/result.json"):
        result: dict[str, Any] = json.loads(found.read_text())
        result["trial_dir"] = found.parent
        results[str(result.get("task_name") or found.parent.name)] = result
    assert results, f"no trial found: {done.stdout[-2000:]}"
    return results


def reward(result: dict[str, Any]) -> float | None:
    rewards = (result.get("verifier_result") or {}).get("rewards") or {}
    value = rewards.get("reward")
    return None if value is None else float(value)


def outcome(result: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((result["trial_dir"] / "cleanroom-outcome.json").read_text())
    return data


# http-sum's verifier talks to the server the agent left running (live_processes);
# artifact-answer's reads what the agent left in /logs/artifacts, Harbor's bound folder.
ORACLE_TASKS = {"fix-median": "killed", "http-sum": "frozen", "artifact-answer": "killed"}
JUNK_REWARD = "#!/bin/bash\necho nan > /logs/verifier/reward.txt\n"


def junk_reward_task(tmp_path: Path) -> Path:
    """A copy of fix-median whose tests write a junk reward on every state."""
    task = tmp_path / "junk-reward"
    shutil.copytree(TASK, task)
    (task / "tests" / "test.sh").write_text(JUNK_REWARD)
    return task


@pytest.fixture(scope="module")
def oracle_trials(
    docker_labels: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """The oracle's trials under the sealed verifier of every task the tests below read,
    by task name: one `harbor run` of a dataset folder, three trials at once. Harbor's
    trials share nothing but the daemon, and each of its docker environment's trials
    ends in a `docker compose down` that waits 10 s for the `sleep infinity` it runs as
    the container's first process: trials side by side wait together."""
    base = tmp_path_factory.mktemp("oracle-trials")
    dataset = base / "dataset"
    dataset.mkdir()
    for name in ORACLE_TASKS:
        shutil.copytree(TASKS / name, dataset / name)
    compose_store_task(dataset)
    separate_task(dataset)
    junk_reward_task(dataset)
    skills_task(dataset)
    shutil.copytree(TASKS / "two-step-report", dataset / "two-step-report")
    try:
        runtime = DockerRuntime.connect(docker_labels)
    except RuntimeUnavailable as exc:
        pytest.fail(f"these tests need a running Docker daemon ({exc}); run `make setup`")
    try:
        results = harbor_run_all(
            runtime, base / "jobs", dataset, ["--agent", "oracle"], SEALED_ARGS, concurrent=3
        )
    finally:
        runtime.remove_labelled(docker_labels, images=False)
    assert sorted(results) == sorted(p.name for p in dataset.iterdir())
    return results


# The tests that read `oracle_trials` run on one worker, so that the run is made once.
ON_THE_ORACLE_TRIALS = pytest.mark.xdist_group("harbor-oracle-trials")


@ON_THE_ORACLE_TRIALS
def test_the_oracle_scores_one_with_the_sealed_verifier(
    oracle_trials: dict[str, dict[str, Any]],
) -> None:
    """One `harbor run` of a dataset folder of tasks, trials side by side."""
    results = oracle_trials
    for name, processes in ORACLE_TASKS.items():
        result = results[name]
        assert result.get("exception_info") is None, (name, result["exception_info"])
        assert reward(result) == 1.0, name
        seen = outcome(result)
        assert seen["outcome"] == "success", (name, seen)
        assert seen["details"]["mode"] == "sealed"
        assert seen["details"]["agent_processes"] == processes, name


def compose_store_task(tmp_path: Path) -> Path:
    """A copy of compose-store that Harbor's docker environment runs offline (it needs a
    registry image for a no-network environment)."""
    task = tmp_path / "compose-store"
    shutil.copytree(TASKS / "compose-store", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('"no-network"', '"public"'))
    return task


@ON_THE_ORACLE_TRIALS
def test_the_sealed_verifier_reaches_the_compose_services_harbor_started(
    runtime: DockerRuntime, oracle_trials: dict[str, dict[str, Any]]
) -> None:
    """compose-store under Harbor: Harbor starts the store and runs the collect hook that
    freezes it; the sealed verifier joins the store by name on a network of its own."""
    result = oracle_trials["compose-store"]
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 1.0
    seen = outcome(result)
    assert seen["details"]["services"] == ["store"]
    assert "total=157 frozen=yes" in seen["details"]["test_output_tail"]
    assert runtime.docker.networks_labelled(*(f"{k}={v}" for k, v in runtime.labels.items())) == []


def test_a_rewriting_process_fools_harbors_own_verifier(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    """The naive baseline: the attack works against Harbor's default verifier."""
    result = harbor_run(runtime, tmp_path, TASK, ["--agent-import-path", PLANTING_AGENT])
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 1.0  # the task was never done


@pytest.mark.parametrize(
    ("mounting", "evidence"),
    [
        # Harbor's default: /logs is in the container's own layer, so is the plant.
        pytest.param((), "A /logs/verifier/reward.txt", marks=pytest.mark.integrations),
        # /logs bound from the trial folder: the plant is seen there, from the host.
        (("--ek", "auto_mounting=true"), "planted /logs/verifier/reward.txt"),
    ],
    ids=["logs-in-container", "logs-bound-from-host"],
)
def test_the_sealed_verifier_scores_the_same_attack_zero(
    runtime: DockerRuntime, tmp_path: Path, mounting: tuple[str, ...], evidence: str
) -> None:
    result = harbor_run(
        runtime,
        tmp_path,
        TASK,
        ["--agent-import-path", PLANTING_AGENT, *mounting],
        SEALED_ARGS,
    )
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 0.0
    seen = outcome(result)
    assert (seen["outcome"], seen["reason"], seen["caused_by"]) == ("failure", "tamper", "agent")
    assert seen["details"]["tamper"] == [evidence]


@pytest.mark.parametrize(
    ("policy", "retries"),
    [
        # Harbor's own retry of an unknown exception: in `make test-integrations`.
        pytest.param(False, 1, id="default", marks=pytest.mark.integrations),
        pytest.param(True, 0, id="policy"),
    ],
)
def test_the_documented_error_policy_keeps_harbor_from_retrying_an_invalid_outcome(
    runtime: DockerRuntime, tmp_path: Path, policy: bool, retries: int
) -> None:
    """With --max-retries 1, Harbor retries an exception it does not know; the error
    policy in examples/harbor/error-policy.yaml stops that for an invalid outcome, which
    stays excluded from the job's metrics either way."""
    task = junk_reward_task(tmp_path)
    config = ("-c", str(REPO / "examples" / "harbor" / "error-policy.yaml")) if policy else ()
    result = harbor_run(
        runtime, tmp_path / "jobs", task, ["--agent", "oracle", "-r", "1", *config], SEALED_ARGS
    )
    assert result["exception_info"]["exception_type"] == "InvalidOutcomeError"
    (job,) = (tmp_path / "jobs").glob("*/result.json")
    stats = json.loads(job.read_text())["stats"]
    assert stats["n_retries"] == retries
    (evaluated,) = stats["evals"].values()
    assert evaluated["n_trials"] == 0  # no reward counted, 0 or otherwise


@ON_THE_ORACLE_TRIALS
def test_an_invalid_outcome_reaches_harbor_as_an_exception_not_a_zero(
    oracle_trials: dict[str, dict[str, Any]],
) -> None:
    """A verifier that writes a junk reward on every state (the agent's and the pristine
    one) is the infrastructure's fault: Harbor records the exception and no reward."""
    result = oracle_trials["junk-reward"]
    assert reward(result) is None
    info = result["exception_info"]
    assert info is not None and info["exception_type"] == "InvalidOutcomeError"
    assert "bad_reward" in info["exception_message"]
    seen = outcome(result)
    assert (seen["outcome"], seen["reason"]) == ("invalid", "bad_reward")


@ON_THE_ORACLE_TRIALS
def test_each_step_of_a_multi_step_task_is_verified_sealed_inside_harbor(
    oracle_trials: dict[str, dict[str, Any]],
) -> None:
    """Harbor runs the steps and calls the verifier once a step; each step is verified
    the sealed way, and the container goes on to the next step (frozen, not killed)."""
    result = oracle_trials["two-step-report"]
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 1.0
    steps = [(s["step_name"], reward(s)) for s in result["step_results"]]
    assert steps == [("configure", 1.0), ("report", 1.0)]
    trial = result["trial_dir"]
    first = json.loads((trial / "cleanroom-outcome.configure.json").read_text())
    last = json.loads((trial / "cleanroom-outcome.report.json").read_text())
    assert (first["outcome"], first["details"]["step"]) == ("success", "configure")
    assert first["details"]["agent_processes"] == "frozen"
    assert last["details"]["agent_processes"] == "killed"


def with_verifier_limit(tmp_path: Path, seconds: int) -> Path:
    """A copy of fix-median whose tests may run ``seconds``."""
    task = tmp_path / "fix-median"
    shutil.copytree(TASK, task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 60", f"timeout_sec = {seconds}"))
    return task


@pytest.mark.parametrize(
    ("multiplier", "control"),
    [
        pytest.param((), "alongside", id="harbors-default-budget"),
        # The same hang with a larger budget: in `make test-integrations`.
        pytest.param(
            ("--verifier-timeout-multiplier", "5"),
            "after",
            id="room-for-the-control-after",
            marks=pytest.mark.integrations,
        ),
    ],
)
def test_an_agent_that_hangs_the_tests_gets_its_zero_not_harbors_timeout(
    runtime: DockerRuntime, tmp_path: Path, multiplier: tuple[str, ...], control: str
) -> None:
    """The tests time out on the agent's state and pass cleanly on the pristine one: the
    agent broke the verifier, a 0, inside the time Harbor allows: in Harbor's default
    budget (the task's 20 s) with the control beside the verification, and with room
    for it after."""
    task = with_verifier_limit(tmp_path, 20)
    result = harbor_run(
        runtime,
        tmp_path / "jobs",
        task,
        ["--agent-import-path", HANGING_AGENT],
        ("--verifier", SEALED, *multiplier),
    )
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 0.0
    seen = outcome(result)
    assert (seen["outcome"], seen["reason"]) == ("failure", "broke_verifier")
    # The control ran on the image Harbor built and started the agent's container from.
    assert seen["details"]["pristine_control"]["image"] == seen["details"]["image"]
    budget = seen["budget"]
    assert budget["control"] == control
    # In the default budget the tests get the task's limit less the reserve (10 s).
    assert budget["test_limit_s"] == (10.0 if control == "alongside" else 20.0)


# The budget's refusal under `harbor run`: in `make test-integrations` (its arithmetic is
# unit-tested; the hang under Harbor's default budget is in every run).
@pytest.mark.integrations
def test_a_budget_that_leaves_no_time_for_the_tests_is_refused_before_verifying(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    """A tenth of the task's limit leaves no time for the tests after cleanroom's reserve:
    an agent could make the run end in Harbor's timeout, with no reward, so the verifier
    refuses to start, saying which multiplier would do."""
    result = harbor_run(
        runtime,
        tmp_path,
        TASK,
        ["--agent", "oracle"],
        ("--verifier", SEALED, "--verifier-timeout-multiplier", "0.1"),
    )
    assert reward(result) is None
    info = result["exception_info"]
    assert info is not None and info["exception_type"] == "BudgetTooShortError"
    assert "--verifier-timeout-multiplier 0.3" in info["exception_message"]
    assert not (result["trial_dir"] / "cleanroom-outcome.json").exists()


def separate_task(tmp_path: Path) -> Path:
    """A copy of separate-verifier that Harbor's docker environment runs offline (it
    enforces no-network with an egress-control image from a registry)."""
    task = tmp_path / "separate-verifier"
    shutil.copytree(TASKS / "separate-verifier", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('"no-network"', '"public"'))
    return task


@ON_THE_ORACLE_TRIALS
def test_a_separate_verifier_s_task_is_verified_sealed_in_harbor_s_verifier_environment(
    oracle_trials: dict[str, dict[str, Any]],
) -> None:
    """Harbor stops the agent's environment and hands the verifier a fresh one of the
    verifier's image with the artifacts put back: verified there, the sealed way."""
    result = oracle_trials["separate-verifier"]
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 1.0
    seen = outcome(result)
    assert seen["outcome"] == "success"
    carried = {a["source"]: a["status"] for a in seen["details"]["artifacts"]}
    assert carried["/app/result.txt"] == "ok"
    assert seen["details"]["state_paths"] == []  # the artifacts alone, as Harbor means it


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        # Regrading a job's recorded trials: in `make test-integrations`.
        pytest.param(["--agent", "oracle"], 1.0, id="oracle", marks=pytest.mark.integrations),
        pytest.param(
            ["--agent-import-path", WRONG_ANSWER_AGENT],
            0.0,
            id="wrong-answer",
            marks=pytest.mark.integrations,
        ),
    ],
)
def test_harbor_regrades_recorded_trials_with_the_sealed_verifier(
    runtime: DockerRuntime, tmp_path: Path, agent: list[str], expected: float
) -> None:
    """`harbor trial regrade` of a trial graded by Harbor's own verifier: the same reward
    from `SealedVerifier`, on the recorded artifacts alone."""
    task = separate_task(tmp_path)
    recorded = harbor_run(runtime, tmp_path / "jobs", task, agent)
    assert reward(recorded) == expected
    argv = [str(HARBOR), "trial", "regrade", str(recorded["trial_dir"]), "-p", str(task)]
    argv += [*SEALED_ARGS, "-o", str(tmp_path / "regraded")]
    done = subprocess.run(
        argv, env=harbor_env(runtime), capture_output=True, text=True, timeout=540
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (found,) = (tmp_path / "regraded").glob("*/result.json")
    regraded: dict[str, Any] = json.loads(found.read_text())
    regraded["trial_dir"] = found.parent
    assert regraded.get("exception_info") is None, regraded["exception_info"]
    assert reward(regraded) == expected
    assert outcome(regraded)["details"]["mode"] == "sealed"


def skills_task(tmp_path: Path) -> Path:
    """A copy of fix-median with ``[environment] skills_dir``."""
    task = tmp_path / "skills-folder"
    shutil.copytree(TASK, task)
    toml = task / "task.toml"
    toml.write_text(
        toml.read_text().replace(
            "[environment]", '[environment]\nskills_dir = "/runtime/skills"', 1
        )
    )
    return task


@ON_THE_ORACLE_TRIALS
def test_a_task_with_a_skills_folder_is_verified(
    oracle_trials: dict[str, dict[str, Any]],
) -> None:
    """``[environment] skills_dir`` is the agent's (Harbor hands its path to the agent):
    the task loads and is verified as any other."""
    result = oracle_trials["skills-folder"]
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 1.0


CATALOGUE_AGENT = "harbor_agents:CatalogueAgent"
# The attacks on the agent's state as data, on the test runner and on a live verifier's
# name files, each with the agent's reason for its 0 through Harbor (the rest of the
# catalogue runs in the red team's own matrix): a link, metadata, bytecode, a name the
# API cannot carry, code cutting pytest short, code writing the reward, a hosts line.
STATE_AND_RUNNER_ATTACKS = {
    "workdir-link-answer": "tamper",
    "artifact-link-chain": "tamper",
    "dist-info-plugin": None,
    "pycache-forgery": None,
    "nonutf8-folder": "tamper",
    "exit-at-import": "runner_cut_short",
    "exit-in-handler": "runner_cut_short",
    "skip-in-code": "runner_cut_short",
    "reward-from-code": "tamper",
    # A live verifier's name files: the hosts file the agent edited never reaches it.
    "hosts-redirect": None,
    # Links to test.sh's scratch answer, frozen to nowhere at install.
    "scratch-link": None,
    "scratch-link-folder": None,
    # Configuration the image's git would obey.
    "git-clean-filter": "tamper",
    # Acts that would turn the agent's 0 into an exclusion: links no stat answers and a
    # flood of them beside a planted reward, a witness line no parser should take whole,
    # tests that wait past their limit on the untouched state, a FIFO on a slow check.
    "unstatable-link": "tamper",
    "link-flood": "tamper",
    "witness-deep-line": "runner_cut_short",
    "idle-on-waiting-tests": "broke_verifier",
    "fifo-slow-check": "broke_verifier",
}


# One in every `make test` (the demo's matrix holds every one on the fast path); all of
# them through Harbor in `make test-integrations`.
IN_EVERY_RUN = {"exit-at-import"}


@pytest.mark.parametrize(
    "attack",
    [
        a if a in IN_EVERY_RUN else pytest.param(a, marks=pytest.mark.integrations)
        for a in sorted(STATE_AND_RUNNER_ATTACKS)
    ],
)
def test_the_sealed_verifier_scores_each_state_and_runner_attack_zero_inside_harbor(
    runtime: DockerRuntime, tmp_path: Path, attack: str
) -> None:
    from cleanroom.redteam.assets import variant_task
    from cleanroom.redteam.catalogue import by_id

    chosen = by_id(attack)
    target = variant_task(chosen, TASKS / chosen.target, tmp_path / "tasks")
    # A variant's limit of a few seconds leaves Harbor's budget no room for what cleanroom
    # keeps beside the tests: Harbor's multiplier gives it (the tests' limit stays).
    room = ("--verifier-timeout-multiplier", "5") if chosen.variant else ()
    result = harbor_run(
        runtime,
        tmp_path,
        target,
        ["--agent-import-path", CATALOGUE_AGENT, "--ak", f"attack={attack}"],
        (*SEALED_ARGS, *room),
    )
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 0.0
    seen = outcome(result)
    assert (seen["outcome"], seen["reason"]) == ("failure", STATE_AND_RUNNER_ATTACKS[attack])


# --- Harbor's podman environment ---------------------------------------------------------
# Debian's podman, rootful, with podman-compose as its compose frontend: the same cases as
# on Docker. The oracle scores 1 and a hang is the agent's 0 (both in `make
# test-integrations`); a planted reward kept alive by a leftover process scores 1 under
# Harbor's own verifier (the naive baseline, in `make test-integrations` too) and 0 under
# `SealedVerifier`, for the agent's tamper; a verifier that cannot give a reward on any
# state reaches Harbor as an exception, never a 0. `SealedVerifier` reaches the agent's
# container through podman's Docker-compatible API.

PODMAN = "podman"


@pytest.mark.integrations
def test_the_oracle_scores_one_on_podman(podman: DockerRuntime, tmp_path: Path) -> None:
    result = harbor_run(podman, tmp_path, TASK, ["--agent", "oracle"], SEALED_ARGS, PODMAN)
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 1.0
    seen = outcome(result)
    assert (seen["outcome"], seen["details"]["mode"]) == ("success", "sealed")
    assert seen["details"]["agent_processes"] == "killed"


# The baseline is a fact about Harbor's own verifier, which `make test` shows on Docker;
# on podman the sealed verifier's tamper evidence for the same plant (below) shows that
# the plant was made.
@pytest.mark.integrations
def test_a_rewriting_process_fools_harbors_own_verifier_on_podman(
    podman: DockerRuntime, tmp_path: Path
) -> None:
    """The naive baseline on podman: the attack works against Harbor's default verifier."""
    result = harbor_run(podman, tmp_path, TASK, ["--agent-import-path", PLANTING_AGENT], (), PODMAN)
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 1.0  # the task was never done


def test_the_sealed_verifier_scores_the_same_attack_zero_on_podman(
    podman: DockerRuntime, tmp_path: Path
) -> None:
    result = harbor_run(
        podman, tmp_path, TASK, ["--agent-import-path", PLANTING_AGENT], SEALED_ARGS, PODMAN
    )
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 0.0
    seen = outcome(result)
    assert (seen["outcome"], seen["reason"], seen["caused_by"]) == ("failure", "tamper", "agent")
    assert seen["details"]["tamper"] == ["A /logs/verifier/reward.txt"]


@pytest.mark.integrations
def test_an_agent_that_hangs_the_tests_gets_its_zero_on_podman(
    podman: DockerRuntime, tmp_path: Path
) -> None:
    """In Harbor's default budget, the pristine control beside the verification."""
    task = with_verifier_limit(tmp_path, 20)
    result = harbor_run(
        podman, tmp_path / "jobs", task, ["--agent-import-path", HANGING_AGENT], SEALED_ARGS, PODMAN
    )
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 0.0
    seen = outcome(result)
    assert (seen["outcome"], seen["reason"]) == ("failure", "broke_verifier")
    assert seen["budget"]["control"] == "alongside"


# On podman: in `make test-integrations` (the tamper's 0 on podman is in every run).
@pytest.mark.integrations
def test_an_invalid_outcome_reaches_harbor_as_an_exception_on_podman(
    podman: DockerRuntime, tmp_path: Path
) -> None:
    task = junk_reward_task(tmp_path)
    result = harbor_run(podman, tmp_path / "jobs", task, ["--agent", "oracle"], SEALED_ARGS, PODMAN)
    assert reward(result) is None
    info = result["exception_info"]
    assert info is not None and info["exception_type"] == "InvalidOutcomeError"
    assert "bad_reward" in info["exception_message"]


# Harbor's generic environment interface, on Harbor's docker environment: what every
# other environment type rests on (exec, upload, download, a fresh environment from the
# same class), taken here with --verifier-kwarg path=generic.

GENERIC_ARGS = (*SEALED_ARGS, "--verifier-kwarg", "path=generic")


def fresh_environments_left(result: dict[str, Any]) -> list[str]:
    """The containers of fresh environments the generic path made for a trial (their
    sessions start with its agent's) and did not remove."""
    prefix = f"{result['trial_name']}__env"[:30].lower()
    done = subprocess.run(
        ["docker", "ps", "-a", "--format", '{{.Label "com.docker.compose.project"}}'],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return [p for p in done.stdout.split() if p.startswith(prefix) and "__cleanroom-" in p]


# `make test` runs the generic path under `harbor run` through the invalid outcome's test
# below, and the oracle's 1 through the red-team sample's honest rows.
@pytest.mark.integrations
def test_the_oracle_scores_one_on_the_generic_path(runtime: DockerRuntime, tmp_path: Path) -> None:
    result = harbor_run(runtime, tmp_path, TASK, ["--agent", "oracle"], GENERIC_ARGS)
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 1.0
    seen = outcome(result)
    assert (seen["outcome"], seen["path"], seen["details"]["mode"]) == (
        "success", "generic", "sealed",
    )  # fmt: skip
    assert seen["details"]["diff"]["source"] == "listing"
    assert seen["details"]["agent_processes"] == "killed"
    assert fresh_environments_left(result) == []


# `make test` proves the generic path's tamper 0 through the red-team sample
# (tests/integration/redteam/test_generic_path.py); this `harbor run` of it is in `make
# test-integrations`.
@pytest.mark.integrations
def test_a_rewriting_process_is_scored_zero_on_the_generic_path(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    """The process the agent left keeps writing the agent's reward folder; the tests run
    in a fresh environment it cannot reach, and its plant is in the agent's listing."""
    result = harbor_run(
        runtime, tmp_path, TASK, ["--agent-import-path", PLANTING_AGENT], GENERIC_ARGS
    )
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 0.0
    seen = outcome(result)
    assert (seen["outcome"], seen["reason"], seen["caused_by"]) == ("failure", "tamper", "agent")
    assert seen["details"]["tamper"] == ["A /logs/verifier/reward.txt"]


@pytest.mark.integrations
def test_an_agent_that_hangs_the_tests_gets_its_zero_on_the_generic_path(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    """In Harbor's default budget (the task's 60 s): the generic path keeps a larger
    reserve (30 s), and runs the control beside the verification."""
    result = harbor_run(
        runtime, tmp_path / "jobs", TASK, ["--agent-import-path", HANGING_AGENT], GENERIC_ARGS
    )
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 0.0
    seen = outcome(result)
    assert (seen["outcome"], seen["reason"]) == ("failure", "broke_verifier")
    assert seen["budget"] == {"allowed_s": 60.0, "test_limit_s": 30.0, "control": "alongside"}


def test_an_invalid_outcome_reaches_harbor_as_an_exception_on_the_generic_path(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    task = junk_reward_task(tmp_path)
    result = harbor_run(runtime, tmp_path / "jobs", task, ["--agent", "oracle"], GENERIC_ARGS)
    assert reward(result) is None
    info = result["exception_info"]
    assert info is not None and info["exception_type"] == "InvalidOutcomeError"
    assert "bad_reward" in info["exception_message"]
    assert fresh_environments_left(result) == []


def test_the_status_page_names_every_environment_type_harbor_has() -> None:
    """The status page's list of Harbor's environment types (which are proven here, which
    rest on the generic path alone) names each type Harbor itself declares."""
    listing = subprocess.run(
        [str(HARBOR.parent / "python"), "-c",
         "from harbor.models.environment_type import EnvironmentType as E; "
         "print(' '.join(e.value for e in E))"],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    status = (REPO / "docs" / "status.md").read_text()
    section = status[status.index("## Harbor's environment types") :]
    section = section[: section.index("\n## ", 4)]
    missing = [t for t in listing.stdout.split() if f"`{t}`" not in section]
    assert missing == []


@pytest.mark.integrations
def test_the_oracle_scores_one_on_the_generic_path_on_podman(
    podman: DockerRuntime, tmp_path: Path
) -> None:
    result = harbor_run(podman, tmp_path, TASK, ["--agent", "oracle"], GENERIC_ARGS, PODMAN)
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 1.0
    seen = outcome(result)
    assert (seen["outcome"], seen["path"]) == ("success", "generic")


@pytest.mark.integrations
def test_a_rewriting_process_is_scored_zero_on_the_generic_path_on_podman(
    podman: DockerRuntime, tmp_path: Path
) -> None:
    result = harbor_run(
        podman, tmp_path, TASK, ["--agent-import-path", PLANTING_AGENT], GENERIC_ARGS, PODMAN
    )
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 0.0
    seen = outcome(result)
    assert (seen["outcome"], seen["reason"], seen["path"]) == ("failure", "tamper", "generic")
    assert seen["details"]["tamper"] == ["A /logs/verifier/reward.txt"]


@pytest.mark.integrations
def test_a_separate_verifier_s_task_is_verified_sealed_on_the_generic_path(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    """Fresh environments of the separate verifier's own definition, as Harbor resolves it."""
    task = separate_task(tmp_path)
    result = harbor_run(runtime, tmp_path / "jobs", task, ["--agent", "oracle"], GENERIC_ARGS)
    assert result.get("exception_info") is None, result["exception_info"]
    assert reward(result) == 1.0
    seen = outcome(result)
    assert (seen["outcome"], seen["path"]) == ("success", "generic")
    assert seen["details"]["state_paths"] == []  # the artifacts alone, as Harbor means it


@pytest.mark.integrations
def test_each_step_of_a_multi_step_task_is_verified_sealed_on_the_generic_path(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    """The steps' 30 s limits leave nothing past the generic path's 30 s reserve: refused
    naming the multiplier, then verified with it."""
    task = TASKS / "two-step-report"
    refused = harbor_run(runtime, tmp_path / "short", task, ["--agent", "oracle"], GENERIC_ARGS)
    (first, *_) = refused["step_results"]
    assert first["exception_info"]["exception_type"] == "BudgetTooShortError"
    assert "--verifier-timeout-multiplier 1.2" in first["exception_info"]["exception_message"]
    args = (*GENERIC_ARGS, "--verifier-timeout-multiplier", "2")
    result = harbor_run(runtime, tmp_path / "jobs", task, ["--agent", "oracle"], args)
    assert reward(result) == 1.0
    steps = {
        s["step_name"]: s["verifier_result"]["rewards"]["reward"] for s in result["step_results"]
    }
    assert steps == {"configure": 1.0, "report": 1.0}
