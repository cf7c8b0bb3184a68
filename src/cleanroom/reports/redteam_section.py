"""The container red-team matrix inside a run report, from the matrix's JSON form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cleanroom.reports.html import Section, render_template

REDTEAM_FILE = "redteam.json"


def _cell_class(verdict: str) -> str:
    v = verdict.lower()
    if "not demonstrated" in v or "blocked" in v or v == "fooled":
        return "cross"
    if "fooled" in v or v == "demonstrated":
        return "lost"  # amber: an attack shown to be real, or a mode's known limit
    return "clean"


def redteam_section(matrix: dict[str, Any]) -> Section:
    """A compact attack x mode table with the matrix's verdict line."""
    modes: list[str] = list(matrix.get("modes", []))
    control = matrix.get("demonstrating_modes") or []
    rows = []
    for row in matrix.get("rows", []):
        cells = []
        for m in modes:
            cell = row.get("cells", {}).get(m, {})
            shown = cell.get("outcome")
            if shown == "invalid":
                shown = f"invalid: {cell.get('reason')}"
            elif cell.get("score") is not None:
                shown = f"{cell['score']:g}"
            verdict = str(cell.get("verdict", ""))
            cells.append({"css_class": _cell_class(verdict), "verdict": verdict, "shown": shown})
        rows.append({"id": row.get("id"), "cells": cells})
    html = render_template(
        "redteam_section.html",
        line=matrix.get("verdict", {}).get("line", ""),
        modes=modes,
        controls={control} if isinstance(control, str) else set(control),
        rows=rows,
    )
    return Section("Container verifier red-team matrix", html)


def load_redteam_section(run_dir: Path) -> Section | None:
    """The section for a run folder that holds a red-team matrix, else None."""
    path = run_dir / REDTEAM_FILE
    if not path.is_file():
        return None
    return redteam_section(json.loads(path.read_text()))
