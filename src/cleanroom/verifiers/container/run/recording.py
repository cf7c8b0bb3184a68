"""Where what a step returned goes in the run's `Evidence`: the typed fields decisions
read, and the details and timings people read."""

from __future__ import annotations

from typing import Any

from cleanroom.verifiers.container.decision.verdict import Evidence
from cleanroom.verifiers.container.run.commands import SetupRun, TestRun


def record_setup(ev: Evidence, run: SetupRun) -> bool:
    """Record how the setup commands ended; whether they all succeeded."""
    ev.setup_s += run.seconds
    ev.timings["setup_s"] = ev.timings.get("setup_s", 0.0) + run.seconds
    ev.setup_failure = run.failure
    ev.timed_out = run.timed_out
    return run.ok


def record_test(ev: Evidence, run: TestRun) -> bool:
    """Record how test.sh ended; whether it ended within the limit."""
    ev.test_s += run.seconds
    ev.timings["test_s"] = ev.timings.get("test_s", 0.0) + run.seconds
    ev.test_exit_code = run.exit_code
    ev.details["test_output_tail"] = run.output_tail
    ev.timed_out = run.timed_out
    return run.timed_out is None


def record_collect(ev: Evidence, ended: list[dict[str, Any]], seconds: float) -> None:
    """Record the collect hooks that ran (`commands.run_collect_hooks`)."""
    if not ended:
        return
    ev.timings["collect_s"] = ev.timings.get("collect_s", 0.0) + seconds
    ev.details.setdefault("collect", []).extend(ended)
