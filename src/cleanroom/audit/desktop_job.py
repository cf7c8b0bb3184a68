"""Auditing an OSWorld task by execution, with no oracle: the effects behind `findings`.

Each stage runs in an environment of a pool of desktops, through OSWorld's interface
(`OSWorldDesktopEnv`): a reset (a new generation, then the task's ``config`` steps),
then the stage's state, then `evaluate`:

- ``t0``: nothing more; the checker must fail;
- ``noop``: ``WAIT`` then ``DONE``, no action; the checker must fail;
- ``gold`` (`gold.gold_plan`): the expected file where the result getter reads it
  (fetched there by the setup's own download of that file, `gold.gold_setup`, or
  written after the setup as the environment's user beneath its home); or, for an
  infeasible task, the last action ``FAIL``. The checker must pass.

A task whose checker pieces cleanroom lacks, or that needs what this machine has not
(the live web, an account, VS Code, a mirror when none is given: `coverage`), is not run,
with that reason. An invalid outcome, and a gold state that could not be made (a file
the mirror lacks, a result path outside the environment's home), is a check not made,
never a flag on the checker.
"""

from __future__ import annotations

import json
import traceback
from pathlib import Path, PurePosixPath
from typing import Any

from cleanroom.audit.findings import (
    CheckerRun,
    RunRecord,
    Stage,
    StageResult,
    TaskAudit,
    Unaudited,
    could_not_audit,
    judge_osworld,
)
from cleanroom.audit.gold import GoldFile, GoldPlan, NoGold, gold_plan, gold_setup
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.environments.errors import PoolError
from cleanroom.guests.base import Guest, GuestError, resolve_path
from cleanroom.host_files import NotARegularFile
from cleanroom.rollouts.osworld_desktop_env import InvalidEvaluation, OSWorldDesktopEnv
from cleanroom.verifiers.osworld.coverage import task_coverage
from cleanroom.verifiers.osworld.download import DownloadError
from cleanroom.verifiers.osworld.mirror import (
    FolderFile,
    Mirror,
    fetch_task_file,
    resolve,
    task_file_urls,
)
from cleanroom.verifiers.osworld.mirror_fill import made_urls
from cleanroom.verifiers.osworld.task import Task, TaskFileError, load_task, rehome_text

TRACE_CHARS = 3000
# The no-op: OSWorld's control actions, no act on the desktop. WAIT lets a setup that is
# still settling finish before the checker reads.
NOOP_ACTIONS = ("WAIT", "DONE")
WAIT_S = 1.0
MODE = "desktop"


class GoldNotMade(Exception):
    """The gold state could not be made; the message says why (not the checker's fault)."""


def not_run_reason(task: Task, mirror: Mirror | None) -> str:
    """Why the task is not run on this machine ("" when it is), by `coverage`'s rules:
    a missing checker piece, or a need beyond a mirror (and the mirror, when none is given
    or a folder mirror lacks a file)."""
    row = task_coverage(task)
    if row.lacks:
        return "lacks " + ", ".join(row.lacks)
    if row.runs_here:
        return ""
    if not row.runs_with_mirror:
        return "needs " + ", ".join(n.value for n in row.ordered_needs())
    if mirror is None:
        return "needs a mirror (its files come from OSWorld's dataset; give --mirror)"
    for url in task_file_urls(task):
        source = resolve(url, mirror)
        if isinstance(source, FolderFile) and not (Path(source.root) / source.relative).is_file():
            return f"the mirror lacks {source.relative}"
    return ""


def audit_on_desktop(task_file: Path, env: OSWorldDesktopEnv) -> TaskAudit:
    """Audit one task in ``env``; every failure ends as a check that could not be made."""
    try:
        return _audit(task_file, env)
    except Exception as exc:  # a bug of cleanroom's own: still a record, with its trace
        trace = "".join(traceback.format_exception(exc))[-TRACE_CHARS:]
        return could_not_audit("audit", Reason.HARNESS_ERROR.value, trace)


def _audit(task_file: Path, env: OSWorldDesktopEnv) -> TaskAudit:
    try:
        task = load_task(task_file)
        config = json.loads(task_file.read_text(encoding="utf-8"))
    except (TaskFileError, OSError, ValueError) as exc:
        return could_not_audit("task loads", Reason.ENVIRONMENT_ERROR.value, str(exc))
    why = not_run_reason(task, env.settings.mirror)
    if why:
        return TaskAudit(not_run=why)
    runs = [
        CheckerRun(_run(env, config, "t0", ()), Status.FAILURE.value),
        CheckerRun(_run(env, config, "noop", NOOP_ACTIONS), Status.FAILURE.value),
    ]
    plan = gold_plan(task)
    skipped: tuple[Stage, ...] = ()
    unmade: tuple[Unaudited, ...] = ()
    notes: tuple[str, ...] = ()
    if isinstance(plan, NoGold):
        skipped = (Stage("gold", Status.SUCCESS.value, StageResult.NOT_RUN, None, plan.why),)
        notes = (f"gold: no gold state in the task file: {plan.why}",)
    else:
        try:
            gold_config, to_place = gold_setup(config, plan)
            record = _run(env, gold_config, "gold", _gold_actions(plan), to_place)
            runs.append(CheckerRun(record, Status.SUCCESS.value, gold=plan.describe()))
        except GoldNotMade as exc:
            why = f"the gold state could not be made: {exc}"
            skipped = (Stage("gold", Status.SUCCESS.value, StageResult.NOT_RUN, None, why),)
            unmade = (Unaudited("gold", Reason.ENVIRONMENT_ERROR.value, why),)
    made = files_made_here(task, env.settings.mirror)
    return judge_osworld(runs, skipped=skipped, unmade=unmade, notes=notes, made_files=made)


def files_made_here(task: Task, mirror: Mirror | None) -> bool:
    """Whether any file the task fetches comes from a mirror folder that made it here
    (`mirror_fill`'s index marks it), rather than from OSWorld's dataset."""
    if mirror is None or mirror.is_url:
        return False
    made = made_urls(Path(mirror.location))
    return any(url in made for url in task_file_urls(task))


def _gold_actions(plan: GoldPlan) -> tuple[str, ...]:
    return (plan.last_action,) if plan.last_action is not None else ()


def _run(
    env: OSWorldDesktopEnv,
    config: dict[str, Any],
    stage: str,
    actions: tuple[str, ...],
    to_place: tuple[GoldFile, ...] = (),
) -> RunRecord:
    """One stage: a reset with the task's setup, the files to place, the actions, the
    checker."""
    try:
        env.reset(task_config=config)
        if env.setup_outcome is not None:  # the setup could not run: the infrastructure's
            return RunRecord.of(stage, MODE, env.setup_outcome)
        _place(to_place, env)
        for action in actions:
            env.step(action, pause=WAIT_S if action == "WAIT" else 0.0)
    except PoolError as exc:  # the environment itself failed under the stage
        why = f"the environment failed: {exc}"
        return RunRecord.of(stage, MODE, Outcome.invalid(Reason.ENVIRONMENT_ERROR, why))
    try:
        env.evaluate()
    except InvalidEvaluation as exc:
        return RunRecord.of(stage, MODE, exc.outcome)
    outcome = env.last_outcome
    assert outcome is not None  # evaluate keeps what it decided
    return RunRecord.of(stage, MODE, outcome)


def _place(files: tuple[GoldFile, ...], env: OSWorldDesktopEnv) -> None:
    """Write each expected file where its result getter reads, as the environment's user;
    `GoldNotMade` when one cannot be had or its place is outside the environment's home."""
    if not files:
        return
    guest = env.guest()
    contents = [(f, _expected_bytes(f, guest, env)) for f in files]
    home = PurePosixPath(guest.home)
    for f, data in contents:
        # The result getter reads OSWorld's home as the guest's (`task_in_home`).
        target = PurePosixPath(resolve_path(rehome_text(f.target, guest.home), guest.home))
        if not target.is_relative_to(home) or target == home:
            # Writing there would write the host's own files, not the environment's.
            raise GoldNotMade(
                f"the result getter reads {f.target}, outside the environment's home {home}"
            )
        try:
            guest.write_file(str(target), data)
        except OSError as exc:
            raise GoldNotMade(f"could not write {f.target}: {exc}") from exc


def _expected_bytes(f: GoldFile, guest: Guest, env: OSWorldDesktopEnv) -> bytes:
    """The expected file as the expected getter reads it (the mirror or the dataset for a
    ``cloud_file``, the guest after setup for a ``vm_file``)."""
    settings = env.settings
    if f.source_getter == "cloud_file":
        try:  # as the cloud_file getter fetches it
            return fetch_task_file(
                f.source,
                settings.mirror,
                timeout=settings.download_timeout,
                cap=settings.file_cap_bytes,
            )
        except DownloadError as exc:
            raise GoldNotMade(str(exc)) from exc
    try:
        return guest.read_file(rehome_text(f.source, guest.home))
    except (OSError, GuestError, NotARegularFile) as exc:
        raise GoldNotMade(f"could not read the expected {f.source}: {exc}") from exc
