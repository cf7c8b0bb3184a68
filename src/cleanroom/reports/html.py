"""The report as one self-contained HTML file: styles and plots inline, no network."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from cleanroom.core.canary import CanarySample
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.publish import Publication
from cleanroom.reports.model import RunReport
from cleanroom.reports.plots import canary_svg, latency_svg, timeline_svg


@dataclass(frozen=True)
class Section:
    """An extra section (for example the red-team matrix), already rendered as HTML."""

    title: str
    html: str


@dataclass(frozen=True)
class _Cell:
    clean: int
    cross: int
    lost: int

    @property
    def kind(self) -> str:
        return "cross" if self.cross else "lost" if self.lost else "clean"

    @property
    def label(self) -> str:
        parts = [f"{n} {name}" for n, name in ((self.cross, "cross"), (self.lost, "lost")) if n]
        return ", ".join(parts) or str(self.clean)


@dataclass(frozen=True)
class _Matrix:
    test: str
    envs: list[str]
    cells: dict[tuple[str, str], _Cell]


def matrices(rows: list[IsolationRow]) -> list[_Matrix]:
    """One from x to matrix of row results per test."""
    out = []
    for test in sorted({r.test for r in rows}):
        mine = [r for r in rows if r.test == test]
        envs = sorted({r.from_env for r in mine} | {r.to_env for r in mine})
        counts: dict[tuple[str, str], Counter[RowResult]] = {}
        for r in mine:
            counts.setdefault((r.from_env, r.to_env), Counter())[r.result] += 1
        cells = {
            k: _Cell(c[RowResult.CLEAN], c[RowResult.CROSS], c[RowResult.LOST])
            for k, c in counts.items()
        }
        out.append(_Matrix(test, envs, cells))
    return out


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("cleanroom.reports", "templates"),
    autoescape=jinja2.select_autoescape(["html"]),
    undefined=jinja2.StrictUndefined,
)


def render_template(name: str, **context: Any) -> str:
    """One of the report's templates, rendered with autoescape on (a section's HTML)."""
    return _ENV.get_template(name).render(**context)


def render_html(
    report: RunReport, canary: list[CanarySample], extra_sections: list[Section] | None = None
) -> str:
    """The whole report as one HTML document."""
    return _ENV.get_template("report.html").render(
        report=report,
        published=isinstance(report.verdict, Publication),
        timeline=timeline_svg(report),
        canary=canary_svg(canary),
        latency=latency_svg(report),
        matrices=matrices(report.rows),
        extra_sections=extra_sections or [],
    )


def write_html(path: Path, html: str) -> Path:
    """Write the report, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
