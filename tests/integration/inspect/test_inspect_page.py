"""docs/integrations/inspect.md as a user follows it: its `inspect eval` command and its
Python, taken from the page and run with inspect_ai and inspect-harbor from .venv-harbor
in a folder laid out as the repository's; each eval's oracle sample scores 1."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cleanroom.verifiers.container.runtime.docker import DockerRuntime

from ...docs_examples import REPO, doc_block, run_shell

pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.integrations,
    pytest.mark.timeout(900),
]

PAGE = "docs/integrations/inspect.md"
PYTHON = REPO / ".venv-harbor" / "bin" / "python"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder where the page's relative paths lead where they lead in the repository."""
    if not PYTHON.with_name("inspect").is_file():
        pytest.fail("no inspect in .venv-harbor: run `make setup`")
    (tmp_path / "examples").symlink_to(REPO / "examples")
    (tmp_path / ".venv-harbor").symlink_to(REPO / ".venv-harbor")
    return tmp_path


@pytest.fixture
def user_env(runtime: DockerRuntime) -> dict[str, str]:
    """A user's environment, but that what cleanroom starts carries the tests' labels and
    cleanroom comes from this checkout's sources."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "CLEANROOM_LABELS": ",".join(f"{k}={v}" for k, v in runtime.labels.items()),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def test_the_page_s_inspect_eval_scores_the_oracle_one(
    checkout: Path, user_env: dict[str, str]
) -> None:
    block = doc_block(PAGE, "Running under inspect_ai")
    done = run_shell(block, cwd=checkout, env={**user_env, "INSPECT_LOG_FORMAT": "json"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (log,) = (checkout / "logs").glob("*.json")
    found = json.loads(log.read_text())
    assert found["status"] == "success", found.get("error")
    (sample,) = found["samples"]
    assert sample["scores"]["sealed_harbor_scorer"]["value"] == 1.0


def test_the_page_s_python_and_its_tally_count_the_oracle_s_sample(
    checkout: Path, user_env: dict[str, str]
) -> None:
    # The page's first snippet, then the one that reads the eval's log back (it continues
    # the first), then what the tests read.
    script = "\n".join(
        [
            doc_block(PAGE, "Running under inspect_ai", 1).text,
            doc_block(PAGE, "Counted per eval").text,
            "import json",
            "print(json.dumps([tally_of(logs[0]).as_metrics(), tally_of(log).as_metrics()]))",
        ]
    )
    done = subprocess.run(
        [str(PYTHON), "-c", script],
        cwd=checkout,
        env=user_env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran, read_back = json.loads(done.stdout.strip().splitlines()[-1])
    assert ran == read_back
    assert (ran["cleanroom/scored"], ran["cleanroom/excluded"]) == (1.0, 0.0)
