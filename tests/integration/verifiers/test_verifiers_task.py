"""Real verifiers rollouts (verifiers 0.4.0 in .venv-verifiers, or the Python that
`CLEANROOM_TEST_VERIFIERS_PYTHON` names) with cleanroom's sealed reward plugged in as
verifiers' own Harbor task.

A scripted model (verifiers_rollouts.py) drives verifiers' bash harness through its
Harbor env and docker runtime: the oracle runs the task's solution; the planter writes 1
to the reward file and leaves a process rewriting it every 50 ms. verifiers' default
`HarborTask` is the naive baseline the planter must fool. The sealed task must score the
oracle 1 and the planter 0 (its tamper), send a container the infrastructure lost to
verifiers' no-score path rather than a 0, and the batch tally must count both apart.
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

pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.integrations,
    pytest.mark.timeout(900),
]

REPO = Path(__file__).resolve().parents[3]
PYTHON = Path(
    os.environ.get("CLEANROOM_TEST_VERIFIERS_PYTHON") or REPO / ".venv-verifiers" / "bin" / "python"
)
DRIVER = Path(__file__).with_name("verifiers_rollouts.py")
TASK = REPO / "examples" / "tasks" / "fix-median"
MISSING_VENV = (
    "no .venv-verifiers with verifiers[harbor] and uv: `make test-integrations` creates it "
    "(needs Python 3.12 or later)"
)


def task_with_uv(folder: Path) -> Path:
    """A copy of fix-median whose image holds uv: verifiers' bash harness runs its
    program as a uv script in the container, and the image has no pip to install uv."""
    uv = PYTHON.with_name("uv")
    if not uv.is_file():
        pytest.fail(MISSING_VENV)
    task = folder / "fix-median"
    shutil.copytree(TASK, task)
    shutil.copy(uv, task / "environment" / "uv")
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "COPY uv /usr/local/bin/uv\n")
    return task


@pytest.fixture(scope="module")
def rollouts(runtime: DockerRuntime, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of the driver: four rollouts of fix-median, side by side, and the tally."""
    if not PYTHON.is_file():
        pytest.fail(MISSING_VENV)
    folder = tmp_path_factory.mktemp("verifiers")
    task = task_with_uv(folder)
    out = folder / "rollouts.json"
    env = {
        **os.environ,
        # cleanroom from this checkout's sources, whatever the venv installed.
        "PYTHONPATH": str(REPO / "src"),
        # The task image and what the verification starts are removed with the runtime's.
        "CLEANROOM_LABELS": ",".join(f"{k}={v}" for k, v in runtime.labels.items()),
    }
    done = subprocess.run(
        [str(PYTHON), str(DRIVER), str(task), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert done.returncode == 0 and out.is_file(), done.stdout[-3000:] + done.stderr[-5000:]
    found: dict[str, Any] = json.loads(out.read_text())
    return found


def rollout(rollouts: dict[str, Any], grader: str, scenario: str) -> dict[str, Any]:
    (found,) = [
        r for r in rollouts["rollouts"] if (r["grader"], r["scenario"]) == (grader, scenario)
    ]
    return found


def test_the_oracle_scores_one_with_the_sealed_task(rollouts: dict[str, Any]) -> None:
    seen = rollout(rollouts, "sealed", "oracle")
    assert seen["ok"], seen["errors"]
    assert seen["rewards"] == {"solved": 1.0}
    assert seen["cleanroom"]["outcome"] == "success"
    assert seen["cleanroom"]["details"]["mode"] == "sealed"
    assert seen["metrics"]["cleanroom/agent_caused"] == 0.0


def test_a_rewriting_process_fools_verifiers_default_harbor_task(
    rollouts: dict[str, Any],
) -> None:
    """The naive baseline: verifiers removes the planted reward before the tests, the
    agent's process writes it back, and a task never done scores 1."""
    seen = rollout(rollouts, "default", "planter")
    assert seen["tool_outputs"] == ["planted\n"]
    assert seen["ok"], seen["errors"]
    assert seen["rewards"] == {"reward": 1.0}
    assert seen["cleanroom"] is None


def test_the_sealed_task_scores_the_same_attack_zero_as_the_agent_s_tamper(
    rollouts: dict[str, Any],
) -> None:
    seen = rollout(rollouts, "sealed", "planter")
    assert seen["tool_outputs"] == ["planted\n"]
    assert seen["ok"], seen["errors"]
    assert seen["rewards"] == {"solved": 0.0}
    outcome = seen["cleanroom"]
    assert (outcome["outcome"], outcome["reason"], outcome["caused_by"]) == (
        "failure",
        "tamper",
        "agent",
    )
    assert "A /logs/verifier/reward.txt" in outcome["details"]["tamper"]
    assert seen["metrics"]["cleanroom/agent_caused"] == 1.0


def test_a_container_the_infrastructure_lost_takes_verifiers_no_score_path(
    rollouts: dict[str, Any],
) -> None:
    """The container is gone before scoring: invalid, raised as verifiers' TaskError,
    so the trace is not ok and its reward stays None. `Trace.reward` reads 0 for it,
    which is why consumers must look at `ok`."""
    seen = rollout(rollouts, "container-removed", "oracle")
    assert seen["ok"] is False
    assert seen["rewards"] == {"solved": None}
    assert seen["reward"] == 0.0  # verifiers' sum over no rewards, not a score
    (error,) = seen["errors"]
    assert error["type"] == "TaskError"
    assert error["message"].startswith("cleanroom: invalid (verifier_unavailable)")
    outcome = seen["cleanroom"]
    assert (outcome["outcome"], outcome["caused_by"]) == ("invalid", "infrastructure")
    assert seen["metrics"]["cleanroom/excluded"] == 1.0


def test_a_scoring_timeout_too_short_for_the_verification_is_refused_with_no_score(
    rollouts: dict[str, Any],
) -> None:
    """verifiers' scoring timeout is the verification's budget: one that leaves no time
    for the tests is refused before the container is looked at, and excluded."""
    seen = rollout(rollouts, "short-scoring-timeout", "oracle")
    assert seen["ok"] is False
    assert seen["rewards"] == {"solved": None}
    (error,) = seen["errors"]
    assert error["type"] == "TaskError"
    assert error["message"].startswith("cleanroom: invalid (harness_error)")
    assert "agent.timeout.scoring" in error["message"]


def test_the_batch_tally_counts_the_tamper_and_the_exclusion_apart(
    rollouts: dict[str, Any],
) -> None:
    """The three sealed rollouts as one batch, from the episodes and from their saved
    records alike."""
    counted = rollouts["tally"]
    assert counted == rollouts["tally_of_saved"]
    assert counted["cleanroom/scored"] == 2.0
    assert counted["cleanroom/success"] == 1.0
    assert counted["cleanroom/agent_caused"] == 1.0
    assert counted["cleanroom/agent_caused/tamper"] == 1.0
    assert counted["cleanroom/excluded"] == 1.0
    assert counted["cleanroom/excluded/verifier_unavailable"] == 1.0
    assert counted["cleanroom/excluded_fraction"] == pytest.approx(1 / 3)
