"""The matrix as one self-contained HTML page: coloured cells, each linking to its details.

No scripts, fonts or images are fetched: the styles are inline and every link is an
anchor in the same file, so the page can be mailed, attached to a run report or opened
from an archive years later.
"""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from typing import Any

from cleanroom.redteam.matrix import Cell, Matrix, Row, RowKind, Verdict
from cleanroom.verifiers.container.modes import Mode, plan

_COLOURS: dict[Verdict, tuple[str, str]] = {
    Verdict.HONEST_OK: ("#d9f2e1", "#135c2c"),
    Verdict.TRUTH: ("#d9f2e1", "#135c2c"),
    Verdict.HELD: ("#d9f2e1", "#135c2c"),
    Verdict.CONTROL_FIRED: ("#ffe9b3", "#6b4a00"),
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
    (Verdict.CONTROL_FIRED, "positive control fired: the attack is real"),
    (Verdict.BEYOND_PROMISE, "cleared fooled by a route it never claimed to close"),
    (Verdict.FOOLED, "fooled, blocked, or attack not demonstrated"),
)

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:72rem;
color:#1d1d1f;padding:0 1rem}
h1{font-size:1.6rem;margin:0 0 .3rem}h2{margin-top:2.4rem;border-bottom:1px solid #ddd}
.banner{padding:.9rem 1.1rem;border-radius:8px;font-weight:600;margin:1rem 0}
.pass{background:#d9f2e1;color:#135c2c}.fail{background:#f9d0d0;color:#7a1010}
.claims{display:flex;gap:.6rem;flex-wrap:wrap;margin:.4rem 0 1rem}
.claim{padding:.25rem .7rem;border-radius:99px;font-size:.9rem}
table.m{border-collapse:separate;border-spacing:3px;width:100%}
table.m th{text-align:left;font-weight:600;padding:.3rem .5rem;font-size:.9rem}
table.m td{padding:.35rem .55rem;border-radius:5px;font-size:.92rem}
table.m td.cell a{display:block;color:inherit;text-decoration:none}
table.m td.cell small{display:block;opacity:.75;font-size:.75rem}
tr.task th{background:#f3f3f5;font-size:.85rem;letter-spacing:.03em;text-transform:uppercase}
.legend span{display:inline-block;margin:.2rem .8rem .2rem 0;font-size:.85rem}
.legend i{display:inline-block;width:.9rem;height:.9rem;border-radius:3px;vertical-align:-2px;
margin-right:.3rem}
.card{border:1px solid #ddd;border-radius:8px;padding:.6rem 1rem;margin:.7rem 0}
.card:target{outline:3px solid #3b82f6}
.card h4{margin:.2rem 0 .4rem}
dl{display:grid;grid-template-columns:11rem 1fr;gap:.15rem .8rem;margin:.3rem 0}
dt{color:#666}dd{margin:0;word-break:break-word}
pre{background:#f6f6f8;padding:.6rem;border-radius:6px;overflow:auto;max-height:18rem;
font-size:.8rem}
.muted{color:#666;font-size:.88rem}
a.back{font-size:.8rem}
"""


def render(matrix: Matrix, *, title: str = "Container verifier red-team matrix") -> str:
    """The whole report as one HTML string."""
    summary = matrix.summary()
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width,initial-scale=1'>",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1 id='top'>{_e(title)}</h1><div class='muted'>generated {now}</div>",
        f"<div class='banner {'pass' if summary.passed else 'fail'}'>{_e(summary.line())}</div>",
        _claims(matrix),
        _legend(),
        _matrix_table(matrix),
        "<h2>What each mode is</h2>",
        "<dl><dt>shared</dt><dd>test.sh in the live agent container; the positive control "
        "for every attack, never a default.</dd>"
        "<dt>cleared</dt><dd>shared, with only the reward files removed as uid 0 right "
        "before test.sh. Known limit: a process the agent left running can still write "
        "the reward.</dd>"
        "<dt>sealed</dt><dd>the agent container frozen; its state paths (the work dir and "
        "the declared state) carried into a fresh container of the pristine task image, "
        "with a fresh /tests and a fresh host folder for the reward, so the verifier's "
        "toolchain is the image's own.</dd></dl>",
        "<h2>Details</h2>",
        *(_row_details(matrix, row) for row in matrix.rows),
        "<h2>Matrix as data</h2><details><summary>JSON</summary><pre>",
        _e(json.dumps(matrix.to_json(), indent=1, default=str)),
        "</pre></details></body></html>",
    ]
    return "".join(parts)


def _claims(matrix: Matrix) -> str:
    s = matrix.summary()
    claims = [
        (
            s.controls_fired,
            f"every control fired ({s.attacks - len(s.not_demonstrated)}/{s.attacks})",
        ),
        (s.sealed_held, f"sealed held ({s.attacks - len(s.sealed_fooled)}/{s.attacks})"),
        (s.honest_everywhere, "honest solution scored 1 everywhere"),
        (not s.noop_wrong, "no-op scored 0 everywhere"),
    ]
    chips = "".join(
        f"<span class='claim {'pass' if ok else 'fail'}'>{'✔' if ok else '✘'} {_e(text)}</span>"
        for ok, text in claims
    )
    return f"<div class='claims'>{chips}</div>"


def _legend() -> str:
    items = "".join(
        f"<span><i style='background:{_COLOURS[v][0]}'></i>{_e(text)}</span>" for v, text in _LEGEND
    )
    return f"<div class='legend'>{items}</div>"


def _matrix_table(matrix: Matrix) -> str:
    control = "<br><small>positive control</small>"
    head = "".join(
        f"<th>{m.value}{control if plan(m).positive_control else ''}</th>" for m in matrix.modes
    )
    out = [f"<table class='m'><thead><tr><th>agent</th>{head}</tr></thead><tbody>"]
    task = None
    for row in matrix.rows:
        if row.task != task:
            task = row.task
            out.append(
                f"<tr class='task'><th colspan='{len(matrix.modes) + 1}'>{_e(task)}</th></tr>"
            )
        label = f"<a href='#{_row_anchor(row)}'>{_e(row.label)}</a>"
        out.append(f"<tr><td>{label}</td>")
        for mode in matrix.modes:
            out.append(_matrix_cell(matrix, row, mode))
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _matrix_cell(matrix: Matrix, row: Row, mode: Mode) -> str:
    cell = matrix.get(row, mode)
    verdict = matrix.judge(row, mode)
    bg, fg = _COLOURS[verdict]
    shown = cell.short if cell else "not run"
    link = f"<a href='#{_cell_anchor(row, mode)}'>"
    return (
        f"<td class='cell' style='background:{bg};color:{fg}'>"
        f"{link}{_e(shown)}<small>{_e(verdict.value)}</small></a></td>"
    )


def _row_details(matrix: Matrix, row: Row) -> str:
    out = [f"<h3 id='{_row_anchor(row)}'>{_e(row.task)} · {_e(row.label)}</h3>"]
    if row.attack is not None:
        a = row.attack
        out.append(
            "<dl>"
            f"<dt>route</dt><dd>{_e(a.route)}</dd>"
            f"<dt>control fires when</dt><dd>{_e(a.control_means)}</dd>"
            f"<dt>cleared expected</dt><dd>{_e(a.cleared.value)}</dd>"
            "</dl>"
            f"<details><summary>agent script</summary><pre>{_e(a.script)}</pre></details>"
        )
    elif row.kind is RowKind.NOOP:
        out.append("<p class='muted'>No agent ran: the task's truth for every attack row.</p>")
    else:
        out.append("<p class='muted'>The task's solution/solve.sh.</p>")
    for mode in matrix.modes:
        out.append(_cell_card(matrix, row, mode))
    return "".join(out)


def _cell_card(matrix: Matrix, row: Row, mode: Mode) -> str:
    cell = matrix.get(row, mode)
    verdict = matrix.judge(row, mode)
    bg, fg = _COLOURS[verdict]
    head = (
        f"<h4><span class='claim' style='background:{bg};color:{fg}'>{_e(verdict.value)}</span> "
        f"{_e(mode.value)}: {_e(cell.short if cell else 'not run')}</h4>"
    )
    body = _cell_fields(cell) if cell else "<p class='muted'>This cell was not run.</p>"
    back = "<a class='back' href='#top'>back to the matrix</a>"
    return f"<div class='card' id='{_cell_anchor(row, mode)}'>{head}{body}{back}</div>"


def _cell_fields(cell: Cell) -> str:
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
    rows = "".join(
        f"<dt>{_e(k)}</dt><dd>{_e(v if isinstance(v, str) else json.dumps(v))}</dd>"
        for k, v in fields
        if v is not None
    )
    logs = ""
    test_out = d.get("test_output_tail")
    if test_out:
        logs += f"<details><summary>test.sh output</summary><pre>{_e(test_out)}</pre></details>"
    agent_out = (d.get("agent_phase") or {}).get("output_tail")
    if agent_out:
        logs += f"<details><summary>agent output</summary><pre>{_e(agent_out)}</pre></details>"
    return f"<dl>{rows}</dl>{logs}"


def _row_anchor(row: Row) -> str:
    return "r-" + re.sub(r"[^a-z0-9]+", "-", row.id.lower())


def _cell_anchor(row: Row, mode: Mode) -> str:
    return f"{_row_anchor(row)}-{mode.value}"


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)
