"""docs/harbor-run.md as a user follows it: each command taken from the page and run with
Harbor 0.26 from .venv-harbor, in a folder laid out as the repository's (``examples`` and
``.venv-harbor`` beside the ``jobs`` folder Harbor writes), and the job's numbers read
with the page's own Python.

The later commands run with ``.venv-harbor/bin`` on ``PATH``, as the page's first block
puts it there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cleanroom.verifiers.container.runtime.docker import DockerRuntime

from ...docs_examples import REPO, doc_block, run_python, run_shell

pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.integrations,
    pytest.mark.timeout(900),
]

PAGE = "docs/harbor-run.md"
HARBOR_BIN = REPO / ".venv-harbor" / "bin"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder where the page's relative paths lead where they lead in the repository."""
    if not (HARBOR_BIN / "harbor").is_file():
        pytest.fail("no .venv-harbor with Harbor: run `make setup` (needs Python 3.12+)")
    (tmp_path / "examples").symlink_to(REPO / "examples")
    (tmp_path / ".venv-harbor").symlink_to(REPO / ".venv-harbor")
    return tmp_path


@pytest.fixture
def user_env(runtime: DockerRuntime, podman: DockerRuntime) -> dict[str, str]:
    """A user's environment, but that what cleanroom starts carries the tests' labels and
    cleanroom comes from this checkout's sources."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "CLEANROOM_LABELS": ",".join(f"{k}={v}" for k, v in runtime.labels.items()),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def with_harbor_on_path(env: dict[str, str]) -> dict[str, str]:
    """The environment after the page's first block: .venv-harbor/bin first on PATH."""
    return {**env, "PATH": os.pathsep.join([str(HARBOR_BIN), env.get("PATH", "")])}


def trials(jobs: Path) -> list[dict[str, Any]]:
    """Every trial's result.json under ``jobs``, oldest job first, with its folder."""
    found = []
    for path in sorted(jobs.glob("*/*/result.json")):
        result: dict[str, Any] = json.loads(path.read_text())
        result["trial_dir"] = path.parent
        found.append(result)
    return found


def reward(result: dict[str, Any]) -> float | None:
    value = ((result.get("verifier_result") or {}).get("rewards") or {}).get("reward")
    return None if value is None else float(value)


def ran(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_first_commands_score_the_oracle_one_on_docker_and_on_podman(
    checkout: Path, user_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ran(run_shell(doc_block(PAGE, "Running under Harbor"), cwd=checkout, env=user_env))
    found = trials(checkout / "jobs")
    assert [reward(t) for t in found] == [1.0, 1.0], [t.get("exception_info") for t in found]
    outcomes = [json.loads((t["trial_dir"] / "cleanroom-outcome.json").read_text()) for t in found]
    assert [o["details"]["mode"] for o in outcomes] == ["sealed", "sealed"]

    # The job's counts, as the page and the SkyRL page read them.
    monkeypatch.chdir(checkout)
    job = found[0]["trial_dir"].parent.name
    counted = run_python(doc_block(PAGE, "What happens"), job=job)
    assert counted["tally_trials"](Path("jobs", job)).as_metrics()["cleanroom/scored"] == 1.0
    skyrl = run_python(
        doc_block("docs/integrations/skyrl-rllm.md", "SkyRL", 2), {"trials_dir": f"jobs/{job}"}
    )
    assert skyrl["metrics"]["cleanroom/scored"] == 1.0
    assert skyrl["metrics"]["cleanroom/agent_caused"] == 0.0


def test_a_multi_step_task_scores_one(checkout: Path, user_env: dict[str, str]) -> None:
    block = doc_block(PAGE, "Multi-step tasks")
    ran(run_shell(block, cwd=checkout, env=with_harbor_on_path(user_env)))
    (trial,) = trials(checkout / "jobs")
    assert reward(trial) == 1.0, trial.get("exception_info")


def test_the_offline_copy_of_compose_store_scores_one(
    checkout: Path, user_env: dict[str, str]
) -> None:
    block = doc_block(PAGE, "Compose services")
    ran(run_shell(block, cwd=checkout, env=with_harbor_on_path(user_env)))
    (trial,) = trials(checkout / "jobs")
    assert reward(trial) == 1.0, trial.get("exception_info")


def test_the_error_policy_s_job_config_runs(checkout: Path, user_env: dict[str, str]) -> None:
    block = doc_block(PAGE, "The error policy")
    done = run_shell(
        block,
        cwd=checkout,
        env=with_harbor_on_path(user_env),
        task="examples/tasks/fix-median",
        agent="oracle",
    )
    ran(done)
    (trial,) = trials(checkout / "jobs")
    assert reward(trial) == 1.0, trial.get("exception_info")


def test_a_recorded_separate_mode_trial_is_regraded_one(
    checkout: Path, user_env: dict[str, str]
) -> None:
    # A copy that Harbor's docker environment runs offline (as in Compose services).
    task = checkout / "separate-verifier"
    shutil.copytree(REPO / "examples" / "tasks" / "separate-verifier", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('"no-network"', '"public"'))
    env = with_harbor_on_path(user_env)
    recorded = subprocess.run(
        ["harbor", "run", "-p", str(task), "-a", "oracle", "-n", "1", "-y"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    ran(recorded)
    (trial,) = trials(checkout / "jobs")
    job, name = trial["trial_dir"].parent.name, trial["trial_dir"].name
    block = doc_block(PAGE, "Separate verifier mode and regrade")
    ran(run_shell(block, cwd=checkout, env=env, job=job, trial=name, task=str(task)))
    # Harbor writes the regraded trial under trials/, its default.
    regraded = [json.loads(p.read_text()) for p in (checkout / "trials").glob("*/result.json")]
    assert [reward(t) for t in regraded] == [1.0], [t.get("exception_info") for t in regraded]
