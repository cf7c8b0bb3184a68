"""Real `inspect eval` runs (inspect_ai and inspect-harbor in .venv-harbor) of the
fix-median task through inspect-harbor's `harbor()` task, in cleanroom's sandbox, with
solvers that need no model (`inspect_tasks`).

The planter under inspect-harbor's own scorer is the naive baseline: that scorer runs
the tests in the agent's container and reads the reward the agent's process keeps
rewriting, and scores 1 a task that was never done. cleanroom's sealed scorer must score
the same run 0 with the reason ``tamper``, still score the oracle 1, and leave a sample
whose container the infrastructure lost out of the metrics (NaN, counted in
``unscored_samples``), never a 0. Results are read from the eval log, not from the exit
status (`inspect eval` exits 0 for an eval whose log says ``error``).

The evals run in .venv-harbor's Python, where `make setup` installs this checkout
editable with ``cleanroom[harbor,inspect]``: its ``inspect_ai`` entry point is what makes
``cleanroom/harbor_sealed`` resolve.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cleanroom.verifiers.container.runtime.docker import DockerRuntime

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[3]
VENV_BIN = REPO / ".venv-harbor" / "bin"
INSPECT = VENV_BIN / "inspect"
PYTHON = VENV_BIN / "python"
HERE = Path(__file__).parent
HELPERS = HERE / "inspect_tasks.py"
TASK = REPO / "examples" / "tasks" / "fix-median"
SEALED = "sealed_harbor_scorer"
HARBOR_SCORER = "harbor_scorer"
INSTALL_HINT = "run `make setup` (it installs cleanroom[harbor,inspect] in .venv-harbor)"


@pytest.fixture(scope="module")
def inspect_env(runtime: DockerRuntime) -> dict[str, str]:
    """The environment `inspect` runs in for these tests; fails (never skips) when
    .venv-harbor has no inspect_ai or inspect-harbor."""
    if not INSPECT.is_file():
        pytest.fail(f"no inspect in .venv-harbor: {INSTALL_HINT}")
    found = subprocess.run(
        [str(PYTHON), "-c", "import inspect_ai, inspect_harbor"], capture_output=True, text=True
    )
    if found.returncode != 0:
        pytest.fail(f"inspect-ai or inspect-harbor missing in .venv-harbor: {INSTALL_HINT}")
    return {
        **os.environ,
        "PYTHONPATH": str(HERE),
        # What the sandbox and the verification start is removed with the test's runtime.
        "CLEANROOM_LABELS": ",".join(f"{k}={v}" for k, v in runtime.labels.items()),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def inspect_eval(env: dict[str, str], logs: Path, *args: str) -> Path:
    """One `inspect eval` with no model, into ``logs``; its log file, which must say the
    eval succeeded."""
    argv = [str(INSPECT), "eval", *args, "--model", "mockllm/model"]
    argv += ["--log-format", "json", "--log-dir", str(logs), "--display", "none"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=540)
    found = sorted(logs.glob("*.json"))
    assert len(found) == 1, f"expected one eval log: {done.stdout[-3000:]}{done.stderr[-3000:]}"
    assert read_log(found[0])["status"] == "success", read_log(found[0]).get("error")
    return found[0]


def read_log(path: Path) -> dict[str, Any]:
    log: dict[str, Any] = json.loads(path.read_text())
    return log


def sample_scores(log: dict[str, Any], scorer: str) -> dict[str, dict[str, Any]]:
    """Each sample's score from ``scorer``, by sample id."""
    return {str(s["id"]): s["scores"][scorer] for s in log["samples"]}


def results(log: dict[str, Any], scorer: str) -> dict[str, Any]:
    """The eval's results for ``scorer``: its metrics' values, scored and unscored counts."""
    found = next(s for s in log["results"]["scores"] if s["name"] == scorer)
    return {
        "metrics": {name: m["value"] for name, m in found["metrics"].items()},
        "scored": found["scored_samples"],
        "unscored": found["unscored_samples"],
    }


def in_inspect(env: dict[str, str], *args: str) -> Any:
    """What `inspect_tasks`, run as a program in .venv-harbor's Python, prints (JSON)."""
    done = subprocess.run(
        [str(PYTHON), str(HELPERS), *args], env=env, capture_output=True, text=True, timeout=540
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def task_args(*extra: str) -> list[str]:
    return ["-T", f"path={TASK}", *extra]


# The evals more than one test reads, each run once.
@pytest.fixture(scope="module")
def oracle_log(inspect_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    logs = tmp_path_factory.mktemp("oracle")
    args = ["cleanroom/harbor_sealed", *task_args("-T", "sandbox=cleanroom")]
    return inspect_eval(inspect_env, logs, *args, "--solver", "inspect_harbor/oracle")


@pytest.fixture(scope="module")
def planter_log(inspect_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    logs = tmp_path_factory.mktemp("planter")
    args = ["cleanroom/harbor_sealed", *task_args("-T", "sandbox=cleanroom")]
    return inspect_eval(inspect_env, logs, *args, "--solver", f"{HELPERS}@planter")


@pytest.fixture(scope="module")
def lost_container_log(
    inspect_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    logs = tmp_path_factory.mktemp("lost")
    task = f"{HELPERS}@fix_median_with_a_lost_container"
    return inspect_eval(inspect_env, logs, task, *task_args())


def test_the_oracle_scores_one_with_the_sealed_scorer(oracle_log: Path) -> None:
    log = read_log(oracle_log)
    score = sample_scores(log, SEALED)["fix-median"]
    assert score["value"] == 1.0
    assert score["answer"] == "success"
    assert score["metadata"]["cleanroom"]["outcome"] == "success"
    assert score["metadata"]["mode"] == "sealed"
    assert results(log, SEALED) == {
        "metrics": {"accuracy": 1.0, "stderr": 0.0},
        "scored": 1,
        "unscored": 0,
    }


def test_the_cleanroom_sandbox_removes_the_container_it_started(
    oracle_log: Path, runtime: DockerRuntime
) -> None:
    labels = [f"{k}={v}" for k, v in runtime.labels.items()]
    sample = sample_scores(read_log(oracle_log), SEALED)["fix-median"]
    container = sample["metadata"]["container"]
    left = [c.id for c in runtime.docker.containers_labelled(*labels, "cleanroom.role=agent")]
    assert container not in left


# The peer's own scorer fooled: in `make test-integrations` (Harbor's own verifier fooled
# is in every run).
@pytest.mark.integrations
def test_the_planter_fools_inspect_harbors_own_scorer(
    inspect_env: dict[str, str], tmp_path: Path
) -> None:
    """The control: the forgery the sealed scorer must catch works on the naive one."""
    args = ["inspect_harbor/harbor", *task_args("-T", "sandbox_env_name=cleanroom")]
    log = read_log(inspect_eval(inspect_env, tmp_path, *args, "--solver", f"{HELPERS}@planter"))
    score = sample_scores(log, HARBOR_SCORER)["fix-median"]
    assert score["value"] == 1.0
    assert "Test exit code: 1" in score["explanation"]  # the tests failed; the 1 is planted


def test_the_planter_scores_zero_for_tamper_with_the_sealed_scorer(
    planter_log: Path,
) -> None:
    log = read_log(planter_log)
    score = sample_scores(log, SEALED)["fix-median"]
    assert score["value"] == 0.0
    assert score["answer"] == "failure"
    assert score["reason"] == "tamper"
    assert score["metadata"]["cleanroom"]["caused_by"] == "agent"
    assert results(log, SEALED)["scored"] == 1


def test_a_lost_container_is_unscored_and_left_out_of_accuracy(
    lost_container_log: Path,
) -> None:
    log = read_log(lost_container_log)
    scores = sample_scores(log, SEALED)
    assert scores["fix-median"]["value"] == 1.0
    lost = scores["fix-median-lost"]
    assert math.isnan(lost["value"])  # never a 0
    assert lost["answer"] == "invalid"
    assert lost["reason"] == "verifier_unavailable"
    assert lost["metadata"]["cleanroom"]["caused_by"] == "infrastructure"
    assert results(log, SEALED) == {
        "metrics": {"accuracy": 1.0, "stderr": 0.0},
        "scored": 1,
        "unscored": 1,
    }


def test_a_sandbox_without_a_container_is_unscored(
    inspect_env: dict[str, str], tmp_path: Path
) -> None:
    task = f"{HELPERS}@a_sandbox_without_a_container"
    log = read_log(inspect_eval(inspect_env, tmp_path, task, *task_args()))
    score = sample_scores(log, SEALED)["local"]
    assert math.isnan(score["value"])
    assert score["reason"] == "verifier_unavailable"
    assert results(log, SEALED)["unscored"] == 1


def test_the_cleanroom_sandbox_keeps_inspects_sandbox_contract(
    inspect_env: dict[str, str], tmp_path: Path
) -> None:
    """What inspect's tools and inspect-harbor ask of a sandbox, with the task's limits
    (fix-median has no network) and inspect's size limits, here 1 MiB, on what is read."""
    limits = {
        "INSPECT_SANDBOX_MAX_READ_FILE_SIZE": str(1 << 20),
        "INSPECT_SANDBOX_MAX_EXEC_OUTPUT_SIZE": str(1 << 20),
    }
    task = f"{HELPERS}@the_cleanroom_sandbox_probed"
    log = read_log(inspect_eval({**inspect_env, **limits}, tmp_path, task, *task_args()))
    seen = log["samples"][0]["store"]["probe"]
    assert seen["input"] == "from stdin"
    assert "cleanroom-input" not in seen["input_left"]  # the staged input is removed
    assert (seen["env"], seen["user"], seen["cwd"]) == ("set", "nobody", "/app/probe")
    assert seen["networks"] == "lo"
    assert seen["timeout"] == "TimeoutError"
    assert seen["text"] == "written\r\n"
    assert seen["bytes"] == seen["link"] == 256
    assert (seen["missing"], seen["folder"]) == ("FileNotFoundError", "IsADirectoryError")
    assert seen["write_folder"] == "IsADirectoryError"
    assert seen["big_read"] == seen["big_output"] == "OutputLimitExceededError"


# inspect's checks that expect the sandbox's default user to be refused a file: this
# sandbox reads and writes files as the harness, through the daemon, as root.
AS_THE_HARNESS = {
    "test_read_file_not_allowed",
    "test_write_text_file_without_permissions",
    "test_write_binary_file_without_permissions",
}


# inspect's own provider suite against the sandbox: in `make test-integrations`; the
# contract test above checks the same calls in every run.
@pytest.mark.integrations
def test_the_cleanroom_sandbox_passes_inspects_own_provider_checks(
    inspect_env: dict[str, str],
) -> None:
    failed = in_inspect(inspect_env, "conformance", str(TASK))
    assert set(failed) == AS_THE_HARNESS, failed


def test_tally_of_counts_exclusions_and_the_agents_zeros_by_reason(
    inspect_env: dict[str, str], lost_container_log: Path, planter_log: Path
) -> None:
    lost = in_inspect(inspect_env, "tally", str(lost_container_log))
    assert lost["cleanroom/scored"] == 1.0
    assert lost["cleanroom/excluded"] == 1.0
    assert lost["cleanroom/excluded/verifier_unavailable"] == 1.0
    planted = in_inspect(inspect_env, "tally", str(planter_log))
    assert planted["cleanroom/agent_caused/tamper"] == 1.0
    assert planted["cleanroom/excluded"] == 0.0


def test_a_log_with_no_sample_is_no_tally_of_zeros(
    inspect_env: dict[str, str], planter_log: Path
) -> None:
    # An eval with no solver and no model ends with no sample: no result to count.
    told = in_inspect(inspect_env, "tally-empty", str(planter_log))
    assert told["raised"] is not None and "holds no sample" in told["raised"]


def test_score_of_keeps_invalid_apart_from_zero(inspect_env: dict[str, str]) -> None:
    scores = in_inspect(inspect_env, "scores")
    assert scores["success"]["value"] == 1.0
    assert scores["failure"]["value"] == 0.25
    assert scores["failure"]["reason"] is None
    assert (scores["tamper"]["value"], scores["tamper"]["reason"]) == (0.0, "tamper")
    assert scores["tamper"]["explanation"] == "a planted reward"
    invalid = scores["invalid"]
    assert (invalid["value"], invalid["answer"]) == ("NaN", "invalid")
    assert invalid["reason"] == "verifier_unavailable"
    assert invalid["metadata"]["cleanroom"]["outcome"] == "invalid"
    assert invalid["metadata"]["container"] == "c1"
