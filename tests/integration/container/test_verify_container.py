"""The public API on a real daemon: a container another harness started, in which an agent
already acted, verified by name through `cleanroom.verify_container` (and its async twin).

The harness here is the test: it starts the task's image as a plain container, lets a
scripted agent act in it (the oracle; a planter that leaves a process rewriting the
reward), and asks cleanroom for the outcome.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import cleanroom
from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task

from ...conftest import RUN_LABEL
from ...docs_examples import doc_block, run_python
from ..acted_containers import ORACLE, PLANTER, act_in, start_container

pytestmark = [pytest.mark.docker, pytest.mark.slow]

# The names the README and docs/integrations/index.md use.
DOCUMENTED_CONTAINER = "trial-main-1"
DOCUMENTED_TASK = "tasks/fix-median"


@pytest.fixture
def agent_container(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> Iterator[Callable[[str], str]]:
    """Start fix-median's image as another harness would, run ``script`` in it as the
    agent, and give the container's name."""
    task = example("fix-median")
    started: list[str] = []

    def act(script: str) -> str:
        ident, name = start_container(runtime, task)
        started.append(ident)
        act_in(runtime, task, ident, script)
        return name

    yield act
    for ident in started:
        runtime.containers.remove(ident)


@pytest.fixture
def documented_container(
    runtime: DockerRuntime,
    example: Callable[[str], Task],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[None]:
    """What the README's snippet and docs/integrations/index.md name: the oracle acted in
    a container called ``trial-main-1``, and fix-median at ``tasks/fix-median`` in the
    working folder."""
    task = example("fix-median")
    shutil.copytree(task.root, tmp_path / DOCUMENTED_TASK)
    monkeypatch.chdir(tmp_path)
    _remove_a_test_s_leftover(runtime, DOCUMENTED_CONTAINER)
    ident, _ = start_container(runtime, task, DOCUMENTED_CONTAINER)
    try:
        act_in(runtime, task, ident, ORACLE)
        yield
    finally:
        runtime.containers.remove(ident)


def _remove_a_test_s_leftover(runtime: DockerRuntime, name: str) -> None:
    """A container of that name that an earlier, killed run of the tests left (it carries
    the tests' label); anyone else's is left alone, and the test then fails on the name."""
    found = runtime.docker.client.containers.list(all=True, filters={"name": f"^{name}$"})
    for ctr in found:
        if RUN_LABEL in ctr.labels:
            ctr.remove(force=True)


def test_the_readme_s_call_scores_the_oracle_s_container_one(documented_container: None) -> None:
    names = run_python(doc_block("README.md", "Rewards in your loop"))
    outcome = names["outcome"]
    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0), outcome.detail
    assert outcome.reward_metrics == {"reward": 1.0}
    assert names["reward"] == 1.0


def test_the_api_page_s_calls_and_tally_count_the_oracle_s_container(
    documented_container: None,
) -> None:
    names = run_python(doc_block("docs/integrations/index.md", "The API"))
    outcome = names["outcome"]
    assert (outcome.status, outcome.reason, outcome.caused_by) == (Status.SUCCESS, None, None)
    assert names["reward"] == 1.0
    # The page's tally, over the batch of that one outcome.
    names["outcomes"] = [outcome]
    tallied = run_python(doc_block("docs/integrations/index.md", "Counted, not hidden"), names)
    metrics = tallied["tally"].as_metrics()
    assert (metrics["cleanroom/scored"], metrics["cleanroom/excluded"]) == (1.0, 0.0)


def test_a_planted_reward_kept_alive_is_the_agent_s_zero(
    agent_container: Callable[[str], str], example: Callable[[str], Task]
) -> None:
    name = agent_container(PLANTER)
    outcome = cleanroom.verify_container(example("fix-median").root, name)
    assert (outcome.status, outcome.score, outcome.reason) == (Status.FAILURE, 0.0, Reason.TAMPER)
    assert outcome.caused_by is cleanroom.Cause.AGENT
    assert cleanroom.reward_or_none(outcome) == 0.0


def test_the_async_form_gives_the_same_outcome(
    agent_container: Callable[[str], str], example: Callable[[str], Task]
) -> None:
    name = agent_container(PLANTER)
    outcome = asyncio.run(cleanroom.verify_container_async(example("fix-median").root, name))
    assert (outcome.status, outcome.reason) == (Status.FAILURE, Reason.TAMPER)


def test_a_container_that_is_not_there_is_excluded_never_a_zero(
    example: Callable[[str], Task],
) -> None:
    outcome = cleanroom.verify_container(example("fix-median").root, "no-such-container-here")
    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.VERIFIER_UNAVAILABLE)
    assert cleanroom.reward_or_none(outcome) is None


def test_a_task_folder_that_cannot_be_used_is_excluded(tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_text("[verifier\n")
    outcome = cleanroom.verify_container(tmp_path, "whatever")
    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.ENVIRONMENT_ERROR)


def test_a_budget_too_short_for_any_verification_is_refused_before_anything_runs(
    example: Callable[[str], Task],
) -> None:
    with pytest.raises(cleanroom.BudgetTooShortError, match="times the task's verifier limit"):
        cleanroom.verify_container(example("fix-median").root, "whatever", budget_s=3)


def test_the_command_line_verifies_a_running_container_through_the_same_api(
    agent_container: Callable[[str], str], example: Callable[[str], Task]
) -> None:
    name = agent_container(PLANTER)
    task_dir = str(example("fix-median").root)
    code = "from cleanroom.cli import main; main()"
    argv = [sys.executable, "-c", code, "verify", task_dir, "--container", name, "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240)
    assert done.returncode == 3, done.stderr  # the agent's own 0
    data = json.loads(done.stdout)
    assert (data["outcome"], data["reason"], data["caused_by"]) == ("failure", "tamper", "agent")
    assert data["details"]["agent"] == name


def test_the_command_line_refuses_an_agent_phase_with_a_container(
    example: Callable[[str], Task],
) -> None:
    code = "from cleanroom.cli import main; main()"
    task_dir = str(example("fix-median").root)
    argv = [sys.executable, "-c", code, "verify", task_dir, "--container", "x", "--solution"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--container verifies what an agent did" in done.stderr
