"""The report's content, read from a run database: pure data, rendered elsewhere."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cleanroom.core.canary import (
    CANARY_ENV,
    GAP_TOLERANCE_S,
    PARKED_CONSOLE_TEST,
    WatchSample,
    largest_gap,
)
from cleanroom.core.isolation import IsolationRow, RowResult, Window, judge_window
from cleanroom.core.publish import (
    ControlResult,
    NodeEvidence,
    Publication,
    Refusal,
    not_claimed,
    publish,
    publish_across_nodes,
    skew_summary,
)
from cleanroom.store.rundb import (
    LatencySample,
    LeakyControlResult,
    RolloutRecord,
    RunStore,
    WatchRecord,
)


@dataclass(frozen=True)
class WindowSummary:
    """One window: its span, its rows and its rollouts' outcomes."""

    index: int
    started_at: float
    ended_at: float | None
    status: str
    rows: int
    cross: int
    lost: int
    failure: str | None
    outcomes: dict[str, int]
    canary_gap_s: float | None = None  # the longest span without a readable look at env00
    console_gap_s: float | None = None  # the same for the parked console, when active

    @property
    def hours(self) -> float:
        return 0.0 if self.ended_at is None else max(self.ended_at - self.started_at, 0) / 3600


@dataclass(frozen=True)
class ParkedConsoleSummary:
    """Whether the parked console was watched in the run, and what it saw."""

    active: bool
    detail: str = ""  # why it was not active
    samples: int = 0
    lost: int = 0
    events: int = 0
    largest_gap_s: float | None = None

    @property
    def said(self) -> str:
        if not self.active:
            return f"not active ({self.detail or 'not started in this run'})"
        gap = "-" if self.largest_gap_s is None else f"{self.largest_gap_s:.1f} s"
        return (
            f"active: {self.samples} sample(s), {self.lost} lost, {self.events} event(s), "
            f"largest gap {gap}"
        )


@dataclass(frozen=True)
class NodeSummary:
    """One node of a run across nodes: how it ended and its own number or refusal."""

    name: str
    status: str  # finished, running, lost or failed
    detail: str
    environments: list[str]
    env_hours: float
    verdict: Publication | Refusal
    control: ControlResult | None
    rows: int
    cross: int
    lost: int
    proven: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "detail": self.detail,
            "environments": self.environments,
            "env_hours": self.env_hours,
            "isolation": _verdict_json(self.verdict),
            "positive_control": None if self.control is None else self.control.__dict__,
            "rows": self.rows,
            "cross": self.cross,
            "lost": self.lost,
            "proven_by_leaky_control": self.proven,
        }


def _verdict_json(verdict: Publication | Refusal) -> dict[str, Any]:
    if isinstance(verdict, Publication):
        return {"published": True, "text": verdict.text, "events": verdict.events}
    return {"published": False, "reason": verdict.reason,
            "failed_windows": verdict.failed_windows}  # fmt: skip


@dataclass(frozen=True)
class RunReport:
    """Everything a report prints about one run."""

    run_dir: Path
    info: dict[str, Any]
    machine: dict[str, str]
    windows: list[WindowSummary]
    rollouts: list[RolloutRecord]
    rows: list[IsolationRow]
    checks: dict[str, dict[str, int]]
    controls: list[ControlResult]
    environments: list[str]
    env_hours: float
    verdict: Publication | Refusal
    not_claimed: list[str] = field(default_factory=list)
    proven: dict[str, list[str]] = field(default_factory=dict)
    trials_scale: float = 1.0
    # The latest positive control's clipboard set skews, as a distribution.
    control_skew: str = ""
    leaky: list[LeakyControlResult] = field(default_factory=list)
    latency: list[LatencySample] = field(default_factory=list)
    parked: ParkedConsoleSummary = field(default_factory=lambda: ParkedConsoleSummary(False))
    gap_tolerance_s: float = GAP_TOLERANCE_S
    # A run across nodes: each node's share, and the number above is the merged one.
    nodes: list[NodeSummary] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The report as plain data (``cleanroom report --json``)."""
        verdict = _verdict_json(self.verdict)
        return {
            "run_dir": str(self.run_dir),
            "run": self.info,
            "machine": self.machine,
            "isolation": verdict,
            "env_hours": self.env_hours,
            "environments": self.environments,
            "positive_control": [c.__dict__ for c in self.controls],
            "positive_control_skew": self.control_skew,
            "checks": self.checks,
            "proven_by_leaky_control": self.proven,
            "trials_scale": self.trials_scale,
            "leaky_controls": [c.__dict__ for c in self.leaky],
            "not_claimed": self.not_claimed,
            "canary_gap_tolerance_s": self.gap_tolerance_s,
            "parked_console": self.parked.__dict__,
            "windows": [{**w.__dict__, "hours": w.hours} for w in self.windows],
            "nodes": [n.to_json() for n in self.nodes],
            "rollouts": [
                {
                    "rollout_id": r.rollout_id,
                    "node": r.node,
                    "env": r.env,
                    "window": r.window,
                    "task": r.task,
                    "outcome": r.outcome.value if r.outcome else None,
                    "reason": r.reason.value if r.reason else None,
                    "score": r.score,
                    "started_at": r.started_at,
                    "ended_at": r.ended_at,
                }
                for r in self.rollouts
            ],
        }


def _acting_envs(store: RunStore, rollouts: list[RolloutRecord]) -> list[str]:
    names = {e.name for e in store.environments()} or {r.env for r in rollouts}
    return sorted(n for n in names if n != CANARY_ENV)


def _checks(rows: list[IsolationRow]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for test in sorted({r.test for r in rows}):
        mine = [r for r in rows if r.test == test]
        counts = Counter(r.result for r in mine)
        out[test] = {
            "trials": len({(r.window, r.trial) for r in mine}),
            "rows": len(mine),
            "clean": counts[RowResult.CLEAN],
            "cross": counts[RowResult.CROSS],
            "lost": counts[RowResult.LOST],
        }
    return out


def _window_summary(
    w: Window,
    status: str,
    rows: list[IsolationRow],
    rollouts: list[RolloutRecord],
    watched: tuple[list[WatchSample], list[WatchSample] | None],
) -> WindowSummary:
    verdict = judge_window(w.index, rows)
    outcomes = Counter(
        r.outcome.value if r.outcome else "unfinished" for r in rollouts if r.window == w.index
    )
    canary, console = watched
    return WindowSummary(w.index, w.started_at, w.ended_at, status, verdict.rows, verdict.cross,
                         verdict.lost, verdict.failure, dict(sorted(outcomes.items())),
                         largest_gap(w, canary),
                         None if console is None else largest_gap(w, console))  # fmt: skip


def _parked(
    record: WatchRecord | None,
    samples: list[WatchSample],
    rows: list[IsolationRow],
    windows: list[WindowSummary],
) -> ParkedConsoleSummary:
    if record is None or not record.active:
        return ParkedConsoleSummary(False, record.detail if record else "")
    events = sum(1 for r in rows if r.test == PARKED_CONSOLE_TEST and r.result is RowResult.CROSS)
    gaps = [w.console_gap_s for w in windows if w.console_gap_s is not None]
    lost = sum(1 for s in samples if not s.ok)
    return ParkedConsoleSummary(True, "", len(samples), lost, events, max(gaps, default=None))


def build_report(store: RunStore, machine: dict[str, str] | None = None) -> RunReport:
    """Read a run and decide what may be published about it; for a run across nodes,
    each node's share on its own and the merged number (`publish_across_nodes`)."""
    report = _build_one(store, machine)
    if store.node is not None:
        return report
    records = store.nodes()
    if not records:
        return report
    parts = [(record, _build_one(store.node_view(record.name), machine)) for record in records]
    evidence = [
        NodeEvidence(
            record.name,
            record.status,
            part.rows,
            part.env_hours,
            part.controls,
            _unfinished(part.windows),
            part.proven,
        )
        for record, part in parts
    ]
    config = report.info.get("meta", {}).get("config", {})
    verdict = publish_across_nodes(
        evidence, trials_scale=report.trials_scale, why_unproven=_why_unproven(config)
    )
    nodes = [
        _node_summary(record.name, record.status, record.detail, part) for record, part in parts
    ]
    proven: dict[str, list[str]] = {}
    for record, part in parts:
        for test, how in part.proven.items():
            proven.setdefault(test, []).extend(f"{h} on {record.name}" for h in how)
    return replace(
        report,
        verdict=verdict,
        nodes=nodes,
        environments=[f"{n.name}:{e}" for n in nodes for e in n.environments],
        # The hours of a node whose control did not fire are not counted.
        env_hours=sum(
            part.env_hours for _, part in parts if part.controls and part.controls[-1].fired
        ),
        proven=proven,
        not_claimed=not_claimed(report.checks, proven, report.trials_scale),
    )


def _node_summary(name: str, status: str, detail: str, part: RunReport) -> NodeSummary:
    counts = Counter(r.result for r in part.rows)
    return NodeSummary(
        name,
        status,
        detail,
        part.environments,
        part.env_hours,
        part.verdict,
        part.controls[-1] if part.controls else None,
        len(part.rows),
        counts[RowResult.CROSS],
        counts[RowResult.LOST],
        part.proven,
    )


def _build_one(store: RunStore, machine: dict[str, str] | None) -> RunReport:
    info = store.run_info()
    rollouts = store.rollouts()
    rows = store.isolation_rows()
    controls = store.control_results()
    canary: list[WatchSample] = list(store.canary_samples())
    console: list[WatchSample] = list(store.console_samples())
    watch = store.watches().get(PARKED_CONSOLE_TEST)
    watched = (canary, console if watch is not None and watch.active else None)
    windows = [
        _window_summary(w, store.window_status(w.index) or "unknown", rows, rollouts, watched)
        for w in store.windows()
    ]
    envs = _acting_envs(store, rollouts)
    env_hours = sum(w.hours for w in windows) * len(envs)
    recorded_machine = info.get("meta", {}).get("machine")
    leaky = store.leaky_controls()
    proven = proven_by(leaky)
    config = info.get("meta", {}).get("config", {})
    trials_scale = float(config.get("trials_scale", 1.0))
    checks = _checks(rows)
    return RunReport(
        run_dir=store.run_dir,
        info=info,
        machine=machine or recorded_machine or {},
        windows=windows,
        rollouts=rollouts,
        rows=rows,
        checks=checks,
        controls=controls,
        environments=envs,
        env_hours=env_hours,
        verdict=publish(
            rows,
            env_hours,
            controls,
            _unfinished(windows),
            proven=proven,
            trials_scale=trials_scale,
            why_unproven=_why_unproven(config),
        ),
        not_claimed=not_claimed(checks, proven, trials_scale),
        proven=proven,
        trials_scale=trials_scale,
        control_skew=skew_summary(controls[-1].clipboard_skew_ms) if controls else "",
        leaky=leaky,
        latency=store.latency_samples(),
        parked=_parked(watch, console, rows, windows),
    )


def _why_unproven(config: dict[str, Any]) -> str:
    if config.get("leaky_controls") is False:
        return (
            "the leaky controls were not run (--no-leaky-controls), so no check was proven "
            "in this run"
        )
    return ""


def _unfinished(windows: list[WindowSummary]) -> dict[int, str]:
    # Only the harness closes a window as closed or failed; anything else (interrupted by
    # a signal, recovered after a crash, still open) never ran its audit and canary verdict.
    return {w.index: w.status for w in windows if w.status not in ("closed", "failed")}


def proven_by(results: list[LeakyControlResult]) -> dict[str, list[str]]:
    """For each test, the leaky setups under which it fired (its leaky controls)."""
    out: dict[str, list[str]] = {}
    for r in results:
        out.setdefault(r.test, [])
        if r.fired and r.leak not in out[r.test]:
            out[r.test].append(r.leak)
    return out
