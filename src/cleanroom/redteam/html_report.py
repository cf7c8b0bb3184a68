"""The matrix as one self-contained HTML page: coloured cells, each linking to its details.

No scripts, fonts or images are fetched: the styles are inline and every link is an
anchor in the same file, so the page can be mailed, attached to a run report or opened
from an archive years later.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import jinja2

from cleanroom.redteam.matrix import Cell, Matrix, Row, RowKind, Verdict
from cleanroom.verifiers.container.modes import Mode, plan

_COLOURS: dict[Verdict, tuple[str, str]] = {
    Verdict.HONEST_OK: ("#d9f2e1", "#135c2c"),
    Verdict.TRUTH: ("#d9f2e1", "#135c2c"),
    Verdict.HELD: ("#d9f2e1", "#135c2c"),
    Verdict.DEMONSTRATED: ("#ffe9b3", "#6b4a00"),
    Verdict.BEYOND_PROMISE: ("#eadcf7", "#4d2470"),
    Verdict.HONEST_BLOCKED: ("#f9d0d0", "#7a1010"),
    Verdict.VACUOUS: ("#f9d0d0", "#7a1010"),
    Verdict.NOT_DEMONSTRATED: ("#f9d0d0", "#7a1010"),
    Verdict.FOOLED: ("#f9d0d0", "#7a1010"),
    Verdict.ESCAPED: ("#f9d0d0", "#7a1010"),
    Verdict.MISSING: ("#eeeeee", "#555555"),
}

_LEGEND = (
    (Verdict.HELD, "held (0 or invalid) / honest 1 / no-op 0"),
    (Verdict.DEMONSTRATED, "demonstrated: the attack is real"),
    (Verdict.BEYOND_PROMISE, "cleared fooled by a route it never claimed to close"),
    (Verdict.FOOLED, "fooled, blocked, or attack not demonstrated"),
)

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("cleanroom.redteam", "templates"),
    autoescape=jinja2.select_autoescape(["html"]),
    undefined=jinja2.StrictUndefined,
)


def render(matrix: Matrix, *, title: str = "Container verifier red-team matrix") -> str:
    """The whole report as one HTML string."""
    return _ENV.get_template("matrix.html").render(
        title=title,
        now=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        summary=matrix.summary(),
        claims=_claims(matrix),
        legend=[(_COLOURS[v][0], text) for v, text in _LEGEND],
        matrix=matrix,
        colours=_COLOURS,
        noop=RowKind.NOOP,
        demonstrates=lambda mode: plan(mode).demonstrates_attacks,
        row_anchor=_row_anchor,
        cell_anchor=_cell_anchor,
        cell_fields=_cell_fields,
        cell_logs=_cell_logs,
        matrix_json=json.dumps(matrix.to_json(), indent=1, default=str),
    )


def _claims(matrix: Matrix) -> list[tuple[bool, str]]:
    """The four claims of the banner, each with whether it holds."""
    s = matrix.summary()
    return [
        (
            s.all_demonstrated,
            f"every attack demonstrated ({s.attacks - len(s.not_demonstrated)}/{s.attacks})",
        ),
        (s.sealed_held, f"sealed held ({s.attacks - len(s.sealed_fooled)}/{s.attacks})"),
        (s.honest_everywhere, "honest solution scored 1 everywhere"),
        (not s.noop_wrong, "no-op scored 0 everywhere"),
    ]


def _cell_fields(cell: Cell) -> list[tuple[str, str]]:
    """A run cell's fields that have a value, as name and text."""
    d = cell.details
    fields: list[tuple[str, Any]] = [
        ("outcome", cell.status),
        ("score", cell.score),
        ("reason", cell.reason),
        ("detail", cell.detail or None),
        ("reward source", d.get("reward_source")),
        ("offending bytes", d.get("reward_bytes")),
        ("test.sh exit code", d.get("test_exit_code")),
        ("tamper", "\n".join(d.get("tamper", [])) or None),
        ("timings (s)", d.get("timings")),
    ]
    return [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in fields if v is not None]


def _cell_logs(cell: Cell) -> list[tuple[str, str]]:
    """The output tails a run cell kept (test.sh's, the agent's), as title and text."""
    d = cell.details
    logs = [("test.sh output", d.get("test_output_tail"))]
    logs.append(("agent output", (d.get("agent_phase") or {}).get("output_tail")))
    return [(title, text) for title, text in logs if text]


def _row_anchor(row: Row) -> str:
    return "r-" + re.sub(r"[^a-z0-9]+", "-", row.id.lower())


def _cell_anchor(row: Row, mode: Mode) -> str:
    return f"{_row_anchor(row)}-{mode.value}"
