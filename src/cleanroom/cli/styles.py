"""The one table of how the CLI colours what it prints: an outcome's status, an audit's
verdict and flag, a control's cell, a pass or a fail. Every command takes its colours
from here, so one word has one colour everywhere."""

from __future__ import annotations

from cleanroom.core.outcomes import Status

GOOD = "bold green"
BAD = "bold red"

STATUS = {Status.SUCCESS: GOOD, Status.FAILURE: "bold yellow", Status.INVALID: BAD}
AUDIT_VERDICT = {
    "clean": "green",
    "flagged": BAD,
    "could not audit": "yellow",
    "interrupted": "yellow",
    "not run": "dim",
}
FLAG_SEVERITY = {"task": "red", "naive": "yellow", "cleanroom": "bold white on red"}
CONTROL_CELL = {"fired": "green", "clean": "white", "lost": "yellow"}


def status_style(status: Status | str) -> str:
    """The colour of an outcome's status (``success``, ``failure``, ``invalid``)."""
    return STATUS[Status(status)]


def passed_style(passed: bool) -> str:
    """The colour of a verdict that passed or did not."""
    return GOOD if passed else BAD
