"""Validating a checker before trusting it: three runs, each in a fresh guest.

- ``t0``: setup, then the checker at once. It must fail; a pass means the checker is
  vacuous (it rewards doing nothing).
- ``oracle``: setup, a known-good action (a shell command run as the user), then the
  checker. It must pass; a fail means the checker or the oracle is broken.
- ``noop``: setup, an empty action through the same channel, then the checker. It must
  fail.

An invalid result in any run means the checker cannot be trusted as it stands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.guests.base import Guest, GuestError
from cleanroom.verifiers.osworld.commands import decode_output
from cleanroom.verifiers.osworld.details import excerpt
from cleanroom.verifiers.osworld.evaluator import TaskRun
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task import Task

VALID = "valid"
VACUOUS = "vacuous"
BROKEN = "broken"

NOOP_ACTION = ":"


@dataclass(frozen=True)
class PhaseResult:
    """One validation run: what it should give, what it gave, and the action it ran."""

    phase: str
    expect: Status
    outcome: Outcome
    action: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Whether the run gave what a sound checker gives."""
        return self.outcome.status is self.expect

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record of the run."""
        return {
            "phase": self.phase,
            "expect": self.expect.value,
            "ok": self.ok,
            "action": self.action,
            **self.outcome.to_json(),
        }


@dataclass(frozen=True)
class Validation:
    """The verdict on one task's checker, with the runs behind it."""

    task_id: str
    verdict: str
    problems: tuple[str, ...]
    phases: tuple[PhaseResult, ...] = field(default=())

    @property
    def valid(self) -> bool:
        """Whether the checker can be trusted."""
        return self.verdict == VALID

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record of the verdict and every run."""
        return {
            "task": self.task_id,
            "verdict": self.verdict,
            "valid": self.valid,
            "problems": list(self.problems),
            "phases": [p.to_json() for p in self.phases],
        }


def judge(phases: list[PhaseResult]) -> tuple[str, tuple[str, ...]]:
    """The verdict and the problems found, from the three runs (pure)."""
    broken: list[str] = []
    vacuous: list[str] = []
    for p in phases:
        o = p.outcome
        if not o.valid:
            reason = o.reason.value if o.reason else "?"
            broken.append(f"{p.phase}: the checker could not run ({reason}): {o.detail}")
        elif p.phase == "oracle" and not p.ok:
            broken.append(
                f"oracle: the known-good end state fails the checker (score {o.score}); "
                "the checker or the oracle is wrong"
            )
        elif p.phase in ("t0", "noop") and not p.ok:
            when = "at t=0, before any action" if p.phase == "t0" else "after a no-op action"
            vacuous.append(f"{p.phase}: the checker passes {when}")
    if broken:
        return BROKEN, tuple(broken + vacuous)
    if vacuous:
        return VACUOUS, tuple(vacuous)
    return VALID, ()


def _act(guest: Guest, command: str, timeout: float) -> tuple[dict[str, Any], str | None]:
    try:
        result = guest.exec(command, shell=True, timeout=timeout)
    except GuestError as exc:
        return {"command": command, "error": str(exc)}, str(exc)
    record = {
        "command": command,
        "returncode": result.exit_code,
        "stdout": excerpt(decode_output(result.stdout), 1000),
        "stderr": excerpt(decode_output(result.stderr), 1000),
    }
    return record, None


def run_phase(
    phase: str,
    expect: Status,
    task: Task,
    base: Guest,
    settings: CheckSettings,
    action: str | None,
    action_timeout: float,
) -> PhaseResult:
    """One run in a fresh guest made from ``base``: setup, ``action`` (None for no action
    at all), then the checker; ``expect`` is what a sound checker gives."""
    try:
        guest = base.fresh()
    except GuestError as exc:
        why = f"could not make a fresh guest: {exc}"
        return PhaseResult(phase, expect, Outcome.invalid(Reason.ENVIRONMENT_ERROR, why))
    with guest, TaskRun(task, guest, settings) as run:
        refused = run.refusal()
        if refused is not None:
            return PhaseResult(phase, expect, refused)
        failed = run.setup()
        if failed is not None:
            return PhaseResult(phase, expect, failed)
        record: dict[str, Any] | None = None
        if action is not None:
            record, error = _act(guest, action, action_timeout)
            if error is not None:
                why = f"the {phase} action could not run: {error}"
                outcome = Outcome.invalid(Reason.ENVIRONMENT_ERROR, why, **run.details)
                return PhaseResult(phase, expect, outcome, record)
        return PhaseResult(phase, expect, run.check(), record)


def validate_task(
    task: Task,
    base: Guest,
    oracle: str,
    settings: CheckSettings | None = None,
    *,
    action_timeout: float = 120.0,
) -> Validation:
    """Run the three validation runs in fresh guests made from ``base`` and judge them."""
    settings = settings or CheckSettings()
    plan: list[tuple[str, Status, str | None]] = [
        ("t0", Status.FAILURE, None),
        ("oracle", Status.SUCCESS, oracle),
        ("noop", Status.FAILURE, NOOP_ACTION),
    ]
    phases = [
        run_phase(name, expect, task, base, settings, action, action_timeout)
        for name, expect, action in plan
    ]
    verdict, problems = judge(phases)
    return Validation(task.id, verdict, problems, tuple(phases))
