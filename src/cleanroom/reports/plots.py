"""Plots for the HTML report, as inline SVG (matplotlib, no display needed)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # never look for a display: reports are made on headless machines

import matplotlib.pyplot as plt

from cleanroom.core.canary import CanarySample
from cleanroom.reports.model import RunReport

OUTCOME_COLOURS = {
    "success": "#2e7d32",
    "failure": "#f9a825",
    "invalid": "#c62828",
    "unfinished": "#757575",
}


def _svg(fig: plt.Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.find("<svg") :]


def timeline_svg(report: RunReport) -> str:
    """Windows as spans on a time line, each rollout a dot at its end, coloured by outcome."""
    fig, ax = plt.subplots(figsize=(9, 2.2 + 0.25 * len(report.environments)))
    t0 = min((w.started_at for w in report.windows), default=0.0)
    envs = sorted({r.env for r in report.rollouts}) or ["-"]
    for w in report.windows:
        end = w.ended_at if w.ended_at is not None else w.started_at
        colour = "#ffcdd2" if w.failure else "#e3f2fd"
        ax.axvspan(w.started_at - t0, end - t0, color=colour, alpha=0.8)
        ax.text(w.started_at - t0, len(envs) - 0.4, f"window {w.index}", fontsize=8)
    for r in report.rollouts:
        key = r.outcome.value if r.outcome else "unfinished"
        at = (r.ended_at or r.started_at) - t0
        ax.scatter(at, envs.index(r.env), color=OUTCOME_COLOURS[key], s=40, zorder=3)
    for name, colour in OUTCOME_COLOURS.items():
        ax.scatter([], [], color=colour, label=name)
    ax.set_yticks(range(len(envs)), envs)
    ax.set_xlabel("seconds since the first window opened")
    ax.legend(loc="upper right", fontsize=7, ncols=4)
    ax.set_ylim(-0.7, len(envs) - 0.1)
    return _svg(fig)


def canary_svg(samples: list[CanarySample]) -> str:
    """Canary samples over time: readable and unchanged, changed, or lost."""
    if not samples:
        return "<p><strong>No canary samples in this run.</strong></p>"
    fig, ax = plt.subplots(figsize=(9, 1.8))
    t0 = samples[0].at
    previous = None
    for s in samples:
        if not s.ok:
            colour, y = "#c62828", 0.0
        elif previous is not None and previous.state != s.state:
            colour, y = "#f9a825", 1.0
        else:
            colour, y = "#2e7d32", 0.5
        ax.scatter(s.at - t0, y, color=colour, s=14)
        if s.ok:
            previous = s
    ax.set_yticks([0, 0.5, 1], ["lost", "unchanged", "changed"])
    ax.set_xlabel("seconds")
    return _svg(fig)


def latency_svg(report: RunReport) -> str:
    """Screenshot latency of bystanders, per test, environment and phase, as box plots."""
    samples = report.latency
    if not samples:
        return "<p><strong>No latency samples in this run.</strong></p>"
    groups: dict[str, list[float]] = {}
    for s in samples:
        key = f"{s.test}\n{s.env}" + (f" {s.phase}" if s.phase else "")
        groups.setdefault(key, []).append(s.ms)
    fig, ax = plt.subplots(figsize=(9, 3))
    ax.boxplot(list(groups.values()), showfliers=True)
    ax.set_xticks(range(1, len(groups) + 1), list(groups), fontsize=7)
    ax.set_ylabel("ms")
    return _svg(fig)
