"""docs/integrations/trl.md as a user follows it: its reward without a trainer, taken from
the page and run in .venv-trl (TRL's Harbor environments, Harbor's docker environment) in
a folder laid out as the repository's. The task's solution as the policy's one call
scores 1, and the sandbox is gone once the page's script closes the environments."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cleanroom.verifiers.container.runtime.docker import DockerRuntime

from ...docs_examples import REPO, doc_block

pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.integrations,
    pytest.mark.timeout(900),
]

PYTHON = REPO / ".venv-trl" / "bin" / "python"


def test_the_reward_without_a_trainer_scores_the_oracle_s_rollout_one(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    if not PYTHON.is_file():
        pytest.fail("no .venv-trl (TRL, Harbor and torch): run `make setup-integrations`")
    (tmp_path / "examples").symlink_to(REPO / "examples")
    block = doc_block("docs/integrations/trl.md", "A reward without a trainer")
    script = f"{block.text}import json\nprint(json.dumps([reward, outcome.to_json()]))\n"
    done = subprocess.run(
        [str(PYTHON), "-c", script],
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO / "src"),
            "CLEANROOM_LABELS": ",".join(f"{k}={v}" for k, v in runtime.labels.items()),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "TRL_EXPERIMENTAL_SILENCE": "1",
        },
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    reward, outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert reward == 1.0, outcome
    assert outcome["outcome"] == "success", outcome["details"]
    # The agent's service, SESSION/main: Harbor ran the sandbox as the Compose project
    # named after the session.
    project = outcome["details"]["agent"].split("/")[0]
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={project}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert left == []
