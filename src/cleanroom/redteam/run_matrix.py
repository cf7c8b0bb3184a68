"""Run the red-team matrix: every row (honest, no-op, attacks) under every mode, on Docker.

Each task's image is built once before any rollout; rollouts then run a few at a time
(they spend most of their time waiting on the daemon). Each cell is a full rollout from
a fresh container, so no attack can leave anything behind for the next.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from cleanroom.core.errors import UnsupportedByRuntimeError
from cleanroom.redteam.assets import assets_for, variant_task
from cleanroom.redteam.catalogue import Attack
from cleanroom.redteam.matrix import Cell, Matrix, Row, RowKind
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.run.capability_check import (
    refuse_unless_capable,
    required_capabilities,
)
from cleanroom.verifiers.container.runtime import VerificationRuntime
from cleanroom.verifiers.container.side_by_side import build_images, side_by_side
from cleanroom.verifiers.container.task import Task, load_task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task

ALL_MODES: tuple[Mode, ...] = (Mode.SHARED, Mode.CLEARED, Mode.SEALED)
# src/cleanroom/redteam/run_matrix.py -> the repository root holds examples/tasks.
EXAMPLE_TASKS = Path(__file__).resolve().parents[3] / "examples" / "tasks"
EXAMPLE_TASK_NAMES = (
    "fix-median",
    "csv-report",
    "http-sum",
    "engine-handoff",
    "install-tool",
    "venv-tool",
    "artifact-answer",
    "word-tally",
    "commit-total",
)
# Examples of Harbor task fields (a healthcheck, env templates, inputs under /logs, a
# separate verifier environment, a multi-step task, compose services). The matrix leaves
# them out to stay short; `cleanroom audit` runs each in sealed with its solution and with
# no action (tests/integration/audit/test_audit_examples.py). All but the last open no
# route to the verifier that the tasks above lack; the compose service's route is tested
# in tests/integration/container/test_compose_services.py.
HARBOR_FORMAT_EXAMPLES = (
    "healthcheck-service",
    "env-templates",
    "logs-inputs",
    "separate-verifier",
    "two-step-report",
    "compose-store",
)

OnCell = Callable[[Row, Mode, Cell], None]


class NoTasks(Exception):
    """No task folders were given and the bundled example tasks are not on disk."""


def example_tasks() -> list[Task]:
    """The example tasks the catalogue targets, from the repository's ``examples/tasks``."""
    if not EXAMPLE_TASKS.is_dir():
        raise NoTasks(f"the example tasks are not at {EXAMPLE_TASKS}; pass TASK_DIR arguments")
    return [load_task(EXAMPLE_TASKS / name) for name in EXAMPLE_TASK_NAMES]


def plan_rows(tasks: Sequence[Task], attacks: Sequence[Attack], *, targeted: bool) -> list[Row]:
    """Honest and no-op rows for every task, then the attacks.

    ``targeted``: each attack runs against the task it was written for (the catalogue's
    default); otherwise every attack runs against every task (but those on a variant of
    their target), which shows which routes a new task's verifier is exposed to.
    """
    rows: list[Row] = []
    for task in tasks:
        rows.append(Row(task.name, RowKind.HONEST))
        rows.append(Row(task.name, RowKind.NOOP))
        rows.extend(
            Row(task.name, RowKind.ATTACK, attack)
            for attack in attacks
            # An attack on a variant needs its own target's tests: only there.
            if attack.target == task.name or not (targeted or attack.variant)
        )
    return rows


def plan_for(tasks: Sequence[Task], attacks: Sequence[Attack]) -> list[Row]:
    """Rows for the CLI: each attack against the task it targets; a task that no attack
    targets (a new task being checked) gets every attack."""
    rows: list[Row] = []
    for task in tasks:
        targeted = any(a.target == task.name for a in attacks)
        rows.extend(plan_rows([task], attacks, targeted=targeted))
    return rows


def agent_for(row: Row) -> AgentSpec:
    """What runs as the agent for a row."""
    if row.attack is not None:
        return AgentSpec.script(row.attack.script, row.attack.id, assets_for(row.attack))
    return AgentSpec.solution() if row.kind is RowKind.HONEST else AgentSpec.noop()


def options_for(row: Row, mode: Mode) -> VerifyOptions:
    """How a cell verifies: in its mode; an attack on the reward reader itself has its
    ``shared`` demonstration read with the container's own programs."""
    naive = row.attack is not None and row.attack.in_container_reader and mode is Mode.SHARED
    return VerifyOptions(mode=mode, in_container_reader=naive)


def refused_rows(
    tasks: Sequence[Task],
    rows: Sequence[Row],
    runtime: VerificationRuntime,
    modes: Sequence[Mode] = ALL_MODES,
) -> dict[str, UnsupportedByRuntimeError]:
    """The rows (by id) that need, under one of ``modes``, what ``runtime`` cannot do,
    each with its refusal; found before anything runs."""
    by_name = {t.name: t for t in tasks}
    refused: dict[str, UnsupportedByRuntimeError] = {}
    for row in rows:
        task = by_name[row.task]
        for mode in modes:
            needed = required_capabilities(task, options_for(row, mode), services=True)
            try:
                refuse_unless_capable(task, needed, runtime)
            except UnsupportedByRuntimeError as exc:
                refused[row.id] = exc
                break
    return refused


def run_matrix(
    tasks: Sequence[Task],
    rows: Sequence[Row],
    runtime: VerificationRuntime,
    *,
    modes: Sequence[Mode] = ALL_MODES,
    jobs: int = 2,
    on_cell: OnCell | None = None,
) -> Matrix:
    """Run every row under every mode and return the filled matrix; when ``runtime``
    cannot do what a row needs, `UnsupportedByRuntimeError` before anything runs."""
    with tempfile.TemporaryDirectory(prefix="cleanroom-variants-") as variants:
        task_of = row_tasks(tasks, rows, Path(variants))
        refused = refused_rows(tasks, rows, runtime, modes)
        if refused:
            raise next(iter(refused.values()))
        matrix = Matrix(tuple(modes), list(rows))
        build_images(list({t.root: t for t in task_of.values()}.values()), runtime)
        work = [(row, mode) for row in rows for mode in modes]

        def one(cell_of: tuple[Row, Mode]) -> Cell:
            row, mode = cell_of
            return Cell.of(
                verify_task(task_of[row.id], agent_for(row), runtime, options_for(row, mode))
            )

        def record(cell_of: tuple[Row, Mode], cell: Cell) -> None:
            matrix.put(*cell_of, cell)
            if on_cell is not None:
                on_cell(*cell_of, cell)

        side_by_side(work, one, max(1, jobs), record)
        return matrix


def row_tasks(tasks: Sequence[Task], rows: Sequence[Row], into: Path) -> dict[str, Task]:
    """The task each row runs against, by row id: its task, or for an attack with a
    variant that task's variant, made in ``into``."""
    by_name = {t.name: t for t in tasks}
    found: dict[str, Task] = {}
    for row in rows:
        task = by_name[row.task]
        if row.attack is not None and row.attack.variant:
            task = load_task(variant_task(row.attack, task.root, into))
        found[row.id] = task
    return found
