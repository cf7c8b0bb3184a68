"""What of a task cleanroom can run: its getters, metrics and setup steps, and the gaps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cleanroom.verifiers.osworld.getters import GETTERS, NOT_IMPLEMENTED
from cleanroom.verifiers.osworld.metrics import METRICS
from cleanroom.verifiers.osworld.own_metrics import OWN_METRICS, REFUSED
from cleanroom.verifiers.osworld.setup_steps import (
    DESKTOP_STEP_RUNNERS,
    DESKTOP_STEPS,
    STEP_RUNNERS,
)
from cleanroom.verifiers.osworld.task import INFEASIBLE, Task


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


@dataclass(frozen=True)
class TaskSupport:
    """One task's getters, metrics and step types, and which of them cleanroom lacks."""

    task_id: str
    path: str
    domain: str
    getters: tuple[str, ...]
    metrics: tuple[str, ...]
    steps: tuple[str, ...]
    missing_getters: tuple[str, ...]
    missing_metrics: tuple[str, ...]
    missing_steps: tuple[str, ...]
    desktop_steps: tuple[str, ...]

    @property
    def checkable(self) -> bool:
        """Whether the checker can score the task (setup may still need a desktop)."""
        return not self.missing_getters and not self.missing_metrics

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record of the report row."""
        return {
            "task": self.task_id,
            "path": self.path,
            "domain": self.domain,
            "getters": list(self.getters),
            "metrics": list(self.metrics),
            "steps": list(self.steps),
            "unsupported": {
                "getters": list(self.missing_getters),
                "metrics": list(self.missing_metrics),
                "steps": list(self.missing_steps),
            },
            "desktop_steps": list(self.desktop_steps),
            "checkable": self.checkable,
        }


def task_support(task: Task) -> TaskSupport:
    """The support report of one task."""
    getters = _unique([g.type for g in task.getters()])
    metrics = _unique([c.func for c in task.evaluator.calls])
    if task.evaluator.infeasible:
        metrics = (INFEASIBLE,)
    steps = _unique([s.type for s in task.config + task.evaluator.postconfig])
    return TaskSupport(
        task_id=task.id,
        path=task.path,
        domain=task.domain,
        getters=getters,
        metrics=metrics,
        steps=steps,
        missing_getters=tuple(g for g in getters if g not in GETTERS),
        missing_metrics=tuple(m for m in metrics if not metric_implemented(m)),
        missing_steps=tuple(
            s for s in steps if s not in STEP_RUNNERS and s not in DESKTOP_STEP_RUNNERS
        ),
        desktop_steps=tuple(s for s in steps if s in DESKTOP_STEPS),
    )


def metric_implemented(name: str) -> bool:
    """Whether cleanroom can call a metric: re-implemented, or OSWorld's own from desktop-env."""
    return name in METRICS or name in OWN_METRICS or name == INFEASIBLE


def missing_for_check(task: Task) -> list[str]:
    """What the checker lacks to score this task, as ``getter X`` / ``metric Y`` phrases."""
    support = task_support(task)
    return [
        f"getter {g} ({NOT_IMPLEMENTED[g]})" if g in NOT_IMPLEMENTED else f"getter {g}"
        for g in support.missing_getters
    ] + [
        f"metric {m} ({REFUSED[m]})" if m in REFUSED else f"metric {m}"
        for m in support.missing_metrics
    ]
