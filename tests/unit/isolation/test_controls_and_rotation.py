"""The control matrix's verdicts and plan, and the modifier test's rows, as pure logic."""

from __future__ import annotations

from cleanroom.core.detectors import ModifierEffect
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.environments.leaks import Leak
from cleanroom.isolation.controls import ISOLATED, Cell, ControlMatrix, judge_cell, plan_setups
from cleanroom.isolation.tests_clipboard import ClipboardTest
from cleanroom.isolation.tests_modifier_leak import ModifierLeakTest, phase_rows, rotation

E = ModifierEffect


def _row(result: RowResult) -> IsolationRow:
    return IsolationRow("t", 0, "env01", "env02", result)


def test_a_cell_with_any_cross_row_fired() -> None:
    rows = [_row(RowResult.CLEAN), _row(RowResult.CROSS), _row(RowResult.LOST)]
    assert judge_cell("t", "shared-display", rows, 1.0).verdict == "fired"


def test_a_cell_with_lost_rows_and_no_cross_is_lost() -> None:
    assert judge_cell("t", "x", [_row(RowResult.CLEAN), _row(RowResult.LOST)], 1).verdict == "lost"


def test_a_cell_without_rows_is_lost_not_clean() -> None:
    assert judge_cell("t", "x", [], 1.0).verdict == "lost"


def test_a_test_that_fires_under_none_of_its_leaks_is_unproven() -> None:
    m = ControlMatrix([Cell("t", "shared-display", "clean", 2, 0, 0, 1.0)])
    assert m.unproven() == ["t"]


def test_a_test_that_names_no_leak_is_unproven_though_clean_on_the_isolated_pool() -> None:
    m = ControlMatrix([Cell("t", ISOLATED, "clean", 2, 0, 0, 1.0)], names_no_leak=["t"])
    assert m.unproven() == ["t"]


def test_a_test_that_fired_under_one_of_its_leaks_is_proven() -> None:
    m = ControlMatrix(
        [
            Cell("t", "shared-display", "fired", 2, 1, 0, 1.0),
            Cell("t", "shared-runtime-dir", "clean", 2, 0, 0, 1.0),
        ]
    )
    assert m.unproven() == []
    assert m.proven("t") == ["shared-display"]


def test_cross_on_the_isolated_pool_is_reported() -> None:
    m = ControlMatrix([Cell("t", ISOLATED, "fired", 2, 1, 0, 1.0)])
    assert m.cross_when_isolated() == ["t"]


def test_the_plan_runs_every_test_isolated_and_each_under_the_leaks_it_names() -> None:
    plan = plan_setups([ClipboardTest(), ModifierLeakTest()])
    assert [t.name for t in plan[ISOLATED]] == ["clipboard", "modifier_leak"]
    assert [t.name for t in plan[Leak.SHARED_DISPLAY.value]] == ["clipboard", "modifier_leak"]
    assert [t.name for t in plan[Leak.SHARED_CLIPBOARD.value]] == ["clipboard"]
    assert Leak.SHARED_HOME.value not in plan


def test_the_holder_and_typist_rotate() -> None:
    envs = ["env01", "env02", "env03"]
    assert [rotation(envs, t) for t in range(3)] == [
        ("env01", "env02"),
        ("env02", "env03"),
        ("env03", "env01"),
    ]


def _phase(modifier: str, effects: dict[str, E | None]) -> set[RowResult]:
    rows = phase_rows("modifier_leak", 0, 1, modifier, "env01", "env02", effects)
    return {r.result for r in rows}


def test_the_word_as_typed_in_the_typists_document_is_clean() -> None:
    assert _phase("shift", {"env01": E.MISSING, "env02": E.EXACT}) == {RowResult.CLEAN}


def test_capitals_anywhere_are_cross() -> None:
    assert _phase("shift", {"env01": E.MISSING, "env02": E.SHIFTED}) == {RowResult.CROSS}


def test_a_missing_word_while_ctrl_is_held_is_cross() -> None:
    assert _phase("ctrl", {"env01": E.MISSING, "env02": E.MISSING}) == {RowResult.CROSS}


def test_a_missing_word_while_shift_is_held_is_lost() -> None:
    assert _phase("shift", {"env01": E.MISSING, "env02": E.MISSING}) == {RowResult.LOST}


def test_an_unsaved_typist_document_is_lost() -> None:
    assert _phase("shift", {"env01": E.MISSING, "env02": None}) == {RowResult.LOST}


def test_the_word_landing_in_another_document_is_cross() -> None:
    assert RowResult.CROSS in _phase("shift", {"env01": E.EXACT, "env02": E.MISSING})
