"""`cleanroom redteam` checks what its runtime can do before any row runs: rows of the
example tasks it cannot run are left out, saying why; rows of tasks or attacks the user
named are refused, exit 2."""

from __future__ import annotations

import io
from pathlib import Path
from typing import cast

import pytest
import typer
from rich.console import Console

from cleanroom.cli.redteam import _runnable
from cleanroom.redteam.matrix import Row, RowKind
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime import RuntimeCapabilities, VerificationRuntime
from cleanroom.verifiers.container.task import load_task

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"
TASKS = [load_task(EXAMPLES / "http-sum"), load_task(EXAMPLES / "fix-median")]
ROWS = [Row("http-sum", RowKind.HONEST), Row("fix-median", RowKind.HONEST)]


class _NoJoinRuntime:
    """Declares every job but a verifier in the agent's network namespace."""

    capabilities = RuntimeCapabilities(
        compose_services=True, verifier_in_agent_network=False, container_programs_reader=True
    )


def runnable(chosen: bool) -> tuple[list[Row], str]:
    said = io.StringIO()
    runtime = cast(VerificationRuntime, _NoJoinRuntime())
    kept = _runnable(TASKS, ROWS, [Mode.SEALED], runtime, Console(file=said), chosen=chosen)
    return kept, said.getvalue()


def test_example_rows_the_runtime_cannot_run_are_left_out_saying_why() -> None:
    kept, said = runnable(chosen=False)
    assert kept == [Row("fix-median", RowKind.HONEST)]
    assert "left out: http-sum" in said and "verifier_in_agent_network" in said


def test_rows_the_user_named_are_refused_before_any_runs() -> None:
    with pytest.raises(typer.Exit) as caught:
        runnable(chosen=True)
    assert caught.value.exit_code == 2
