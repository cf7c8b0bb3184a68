"""What the tests' scripted policy sends through TRL's ``bash`` tool on fix-median, and
the infrastructure fault the tests cause from outside; run in .venv-trl (TRL, Harbor),
with this folder and tests/integration/harbor on PYTHONPATH."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from harbor_agents import REWRITER

from cleanroom.integrations.environment import compose_project_name

TASK = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "fix-median"
# The task's own solution, sent as one command.
ORACLE = (TASK / "solution" / "solve.sh").read_text()
# A passing reward planted, and a detached process left behind that keeps it in place
# (the Harbor suite's planting agent does the same).
PLANT = f"echo 1 > /logs/verifier/reward.txt; {REWRITER}"
# An honest attempt that does not fix the bug: fix-median's test.sh then writes no reward.
NOTHING = "cat /app/stats.py"


def remove_sandbox(environment: Any) -> list[str]:
    """Remove the containers of a TRL environment's sandbox from outside, as a failing
    host or daemon would: the infrastructure's fault, not the agent's. Harbor's docker
    environment runs the sandbox as a Compose project named after its session."""
    project = compose_project_name(environment._env.session_id)
    label = f"label=com.docker.compose.project={project}"
    ids = subprocess.run(
        ["docker", "ps", "-aq", "--filter", label],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert ids, f"no container of the sandbox {project}"
    subprocess.run(["docker", "rm", "-f", *ids], capture_output=True, check=True)
    return ids
