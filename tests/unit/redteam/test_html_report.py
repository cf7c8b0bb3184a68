"""The HTML report is one self-contained file whose every cell links to its details."""

from __future__ import annotations

import re

from cleanroom.redteam.catalogue import by_id
from cleanroom.redteam.html_report import render
from cleanroom.redteam.matrix import Cell, Matrix, Row, RowKind
from cleanroom.verifiers.container.modes import Mode

MODES = (Mode.SHARED, Mode.CLEARED, Mode.SEALED)


def small_matrix() -> Matrix:
    honest = Row("fix-median", RowKind.HONEST)
    attack = Row("fix-median", RowKind.ATTACK, by_id("planted-reward-txt"))
    matrix = Matrix(MODES, [honest, attack])
    for mode in MODES:
        matrix.put(honest, mode, Cell("success", 1.0))
    matrix.put(attack, Mode.SHARED, Cell("success", 1.0, details={"reward_source": "<x>"}))
    matrix.put(attack, Mode.CLEARED, Cell("failure", 0.0))
    matrix.put(attack, Mode.SEALED, Cell("invalid", None, "tamper", "wrote /usr/bin/x"))
    return matrix


def test_the_page_fetches_nothing() -> None:
    page = render(small_matrix())

    assert not re.search(r"""(src|href)=['"]?(https?:)?//""", page)
    assert "<script" not in page
    assert "<link" not in page


def test_every_internal_link_has_its_anchor() -> None:
    page = render(small_matrix())

    targets = set(re.findall(r"href='#([^']+)'", page))
    anchors = set(re.findall(r"id='([^']+)'", page))

    assert targets
    assert targets <= anchors


def test_every_cell_links_to_its_own_details() -> None:
    page = render(small_matrix())

    for mode in MODES:
        assert f"href='#r-fix-median-planted-reward-txt-{mode.value}'" in page


def test_cells_are_coloured_by_what_they_show() -> None:
    page = render(small_matrix())

    assert "demonstrated" in page
    assert "background:#ffe9b3" in page  # the demonstrated cell
    assert "background:#d9f2e1" in page  # held and honest cells


def test_details_are_escaped() -> None:
    page = render(small_matrix())

    assert "&lt;x&gt;" in page
    assert "<x>" not in page


def test_every_value_from_a_run_or_the_caller_is_escaped() -> None:
    matrix = small_matrix()
    [attack] = [r for r in matrix.rows if r.attack is not None]
    matrix.put(
        attack,
        Mode.CLEARED,
        Cell("failure", 0.0, details={"test_output_tail": "</pre><b>out</b>", "tamper": ["<t>"]}),
    )
    page = render(matrix, title="<i>matrix</i>")

    assert "<i>matrix</i>" not in page and "&lt;i&gt;matrix&lt;/i&gt;" in page
    assert "</pre><b>out</b>" not in page
    assert "<t>" not in page
