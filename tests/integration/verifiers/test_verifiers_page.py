"""docs/integrations/verifiers.md as a user follows it, with no model: its offline recipe
(the scripted model endpoint of examples/offline, `vf-eval` on fix-median with uv in its
image) run from the page in a folder laid out as the repository's, the batch tally read
from the run's saved traces with the page's own line, and its Python route's env built
as the page builds it. All in .venv-verifiers."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cleanroom.verifiers.container.runtime.docker import DockerRuntime

from ...docs_examples import REPO, doc_block, run_shell

pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.integrations,
    pytest.mark.timeout(900),
]

PAGE = "docs/integrations/verifiers.md"
PYTHON = REPO / ".venv-verifiers" / "bin" / "python"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder where the page's relative paths lead where they lead in the repository."""
    if not PYTHON.with_name("uv").is_file():
        pytest.fail("no .venv-verifiers with verifiers and uv: run `make setup-integrations`")
    (tmp_path / "examples").symlink_to(REPO / "examples")
    (tmp_path / ".venv-verifiers").symlink_to(REPO / ".venv-verifiers")
    return tmp_path


@pytest.fixture
def user_env(runtime: DockerRuntime) -> dict[str, str]:
    """A user's environment, but that what cleanroom starts carries the tests' labels."""
    return {
        **os.environ,
        "CLEANROOM_LABELS": ",".join(f"{k}={v}" for k, v in runtime.labels.items()),
    }


def in_verifiers(checkout: Path, env: dict[str, str], script: str) -> Any:
    """Run ``script`` in .venv-verifiers' Python with this checkout's cleanroom; the JSON
    its last line prints."""
    done = subprocess.run(
        [str(PYTHON), "-c", script],
        cwd=checkout,
        env={**env, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_offline_recipe_scores_the_scripted_oracle_one_and_the_tally_counts_it(
    checkout: Path, user_env: dict[str, str]
) -> None:
    done = run_shell(doc_block(PAGE, "Trying it offline"), cwd=checkout, env=user_env, timeout=840)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    (traces,) = (checkout / "outputs").rglob("traces.jsonl")
    episodes = [json.loads(line) for line in traces.read_text().splitlines() if line.strip()]
    assert len(episodes) == 1, episodes
    (trace,) = episodes[0]["traces"]
    assert trace["rewards"]["solved"]["score"] == 1.0, json.dumps(trace)[-3000:]
    assert trace["info"]["cleanroom"]["outcome"] == "success", trace["info"]
    # The module the recipe wrote is the page's (its first line names the file).
    module = doc_block(PAGE, "By taskset id (`vf-eval`, prime-rl's env servers)").text
    assert (checkout / "cleanroom_sealed_harbor.py").read_text() == module.split("\n", 1)[1]

    # The page's batch tally, over the run's saved records.
    tally = doc_block(PAGE, "Counted per batch").text
    metrics = in_verifiers(
        checkout,
        user_env,
        "import json\n"
        "from cleanroom.integrations.verifiers_task import tally_of\n"
        f"episodes = [json.loads(line) for line in open({str(traces)!r}) if line.strip()]\n"
        f"{tally}"
        "print(json.dumps(tally_of(episodes).as_metrics()))\n",
    )
    assert (metrics["cleanroom/scored"], metrics["cleanroom/excluded"]) == (1.0, 0.0)


def test_the_python_route_builds_verifiers_own_env_of_the_task(
    checkout: Path, user_env: dict[str, str]
) -> None:
    block = doc_block(PAGE, "From Python")
    built = in_verifiers(
        checkout,
        user_env,
        f"{block.text}import json\n"
        "print(json.dumps([type(env).__name__, len(list(env.taskset))]))\n",
    )
    assert built == ["HarborEnv", 1]
