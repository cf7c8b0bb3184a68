"""The red-team matrix as a section of the run report: built from the matrix's JSON form,
escaped, with the demonstrating mode named as the matrix names it."""

from __future__ import annotations

from cleanroom.redteam.catalogue import by_id
from cleanroom.redteam.matrix import Cell, Matrix, Row, RowKind
from cleanroom.reports.redteam_section import redteam_section
from cleanroom.verifiers.container.modes import Mode

MODES = (Mode.SHARED, Mode.CLEARED, Mode.SEALED)


def small_matrix() -> Matrix:
    attack = Row("fix-median", RowKind.ATTACK, by_id("planted-reward-txt"))
    matrix = Matrix(MODES, [attack])
    matrix.put(attack, Mode.SHARED, Cell("success", 1.0))
    matrix.put(attack, Mode.CLEARED, Cell("failure", 0.0))
    matrix.put(attack, Mode.SEALED, Cell("invalid", None, "tamper", "wrote /usr/bin/x"))
    return matrix


def test_the_demonstrating_mode_is_labelled_as_the_matrix_lists_it() -> None:
    section = redteam_section(small_matrix().to_json())

    assert "<th>shared (demonstrates)</th>" in section.html
    assert "<th>cleared</th>" in section.html and "<th>sealed</th>" in section.html


def test_cells_show_their_outcome_and_verdict_and_values_are_escaped() -> None:
    matrix = small_matrix().to_json()
    matrix["rows"][0]["id"] = "<b>row</b>"
    section = redteam_section(matrix)

    assert "<b>row</b>" not in section.html and "&lt;b&gt;row&lt;/b&gt;" in section.html
    assert "invalid: tamper" in section.html
    assert "<td class='lost' title='demonstrated'>1<br><small>demonstrated</small></td>" in (
        section.html
    )
