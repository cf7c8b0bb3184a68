"""The control matrix's verdicts and plan, and the modifier test's rows, as pure logic."""

from __future__ import annotations

from pathlib import Path

from cleanroom.core.detectors import ModifierEffect
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.environments.leaky_setups import Leak
from cleanroom.harness.loop import load_battery
from cleanroom.isolation.checks.clipboard import ClipboardCheck
from cleanroom.isolation.checks.crash_blast_radius import CrashBlastRadiusCheck
from cleanroom.isolation.checks.files_and_prefs import FilesAndPrefsCheck
from cleanroom.isolation.checks.modifier_leak import ModifierLeakCheck, phase_rows, rotation
from cleanroom.isolation.checks.observation_privacy import DURATION_S, ObservationPrivacyCheck
from cleanroom.isolation.checks.stale_generation import StaleGenerationCheck
from cleanroom.isolation.controls.matrix import (
    ISOLATED,
    Cell,
    ControlMatrix,
    _fresh_folder,
    cover_setups,
    fault_setup,
    faults_of,
    for_controls,
    judge_cell,
    plan_setups,
    setup_fault,
    setup_programs,
    setups_of,
)
from cleanroom.isolation.fault import Fault

BYPASS = fault_setup(Fault.GENERATION_CHECK_BYPASSED)

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
    plan = plan_setups([ClipboardCheck(), ModifierLeakCheck()])
    assert [t.name for t in plan[ISOLATED]] == ["clipboard", "modifier_leak"]
    assert [t.name for t in plan[Leak.SHARED_DISPLAY.value]] == ["clipboard", "modifier_leak"]
    assert [t.name for t in plan[Leak.SHARED_CLIPBOARD.value]] == ["clipboard"]
    assert Leak.SHARED_HOME.value not in plan


def test_the_plan_runs_each_test_with_a_fault_of_its_own_under_that_fault() -> None:
    plan = plan_setups([ClipboardCheck(), StaleGenerationCheck(), CrashBlastRadiusCheck()])
    assert [t.name for t in plan[BYPASS]] == ["stale_generation"]
    bystander = fault_setup(Fault.CRASH_HITS_BYSTANDER)
    assert [t.name for t in plan[bystander]] == ["crash_blast_radius"]
    assert [s for s in plan if s.startswith("fault:")] == [BYPASS, bystander]
    # Leaks chosen or not, a selected test with a fault still runs it; unless told not to.
    assert BYPASS in plan_setups([StaleGenerationCheck()], [Leak.SHARED_HOME])
    assert BYPASS not in plan_setups([StaleGenerationCheck()], faults=False)
    assert not any(s.startswith("fault:") for s in plan_setups([ClipboardCheck()]))


def test_the_cover_gives_every_test_one_setup_it_must_fire_under_with_few_pools() -> None:
    tests = list(load_battery().values())
    cover = cover_setups(tests)
    placed = [t.name for members in cover.values() for t in members]
    assert sorted(placed) == sorted(t.name for t in tests)  # each test once
    for setup, members in cover.items():
        assert all(setup in setups_of(t) for t in members)
    assert len(cover) < len({x for t in tests for x in setups_of(t)})


def test_the_cover_runs_a_test_that_did_not_fire_under_its_next_setup_only() -> None:
    clipboard, stale = ClipboardCheck(), StaleGenerationCheck()
    first = cover_setups([clipboard, stale])
    assert {s: [t.name for t in m] for s, m in first.items()} == {
        Leak.SHARED_DISPLAY.value: ["clipboard"],
        BYPASS: ["stale_generation"],
    }
    again = cover_setups([clipboard], {"clipboard": [Leak.SHARED_DISPLAY.value]})
    assert {s: [t.name for t in m] for s, m in again.items()} == {
        Leak.SHARED_CLIPBOARD.value: ["clipboard"]
    }
    # Every setup tried: nothing is left to plan, so the loop of the cover ends.
    assert cover_setups([stale], {"stale_generation": [BYPASS]}) == {}


def test_fault_setup_names_round_trip() -> None:
    for fault in Fault:
        assert setup_fault(fault_setup(fault)) is fault
    assert setup_fault(ISOLATED) is None
    assert setup_fault(Leak.SHARED_DISPLAY.value) is None
    assert faults_of(StaleGenerationCheck()) == [Fault.GENERATION_CHECK_BYPASSED]
    assert faults_of(ClipboardCheck()) == []


def test_a_test_that_names_no_leak_is_proven_by_its_own_fault_firing() -> None:
    m = ControlMatrix(
        [Cell("t", ISOLATED, "clean", 1, 0, 0, 1.0), Cell("t", BYPASS, "fired", 1, 1, 0, 1.0)],
        names_no_leak=["t"],
    )
    assert m.unproven() == []
    assert m.proven("t") == [BYPASS]
    assert m.cross_when_isolated() == []


def test_a_fault_that_did_not_fire_proves_nothing() -> None:
    for verdict in ("clean", "lost"):
        m = ControlMatrix([Cell("t", BYPASS, verdict, 1, 0, 0, 1.0)], names_no_leak=["t"])
        assert m.unproven() == ["t"]
        assert m.has_fault_cell("t")


def test_a_test_fired_by_its_fault_but_none_of_its_leaks_is_proven() -> None:
    m = ControlMatrix(
        [
            Cell("t", "shared-display", "clean", 2, 0, 0, 1.0),
            Cell("t", BYPASS, "fired", 1, 1, 0, 1.0),
        ]
    )
    assert m.unproven() == []


def test_a_setups_pool_runs_what_its_tests_need_each_program_once() -> None:
    tests = [ClipboardCheck(), FilesAndPrefsCheck(), ObservationPrivacyCheck(), ModifierLeakCheck()]
    assert setup_programs(tests) == ("writer", "terminal", "browser")
    assert setup_programs([ClipboardCheck()]) == ()
    assert setup_programs([ObservationPrivacyCheck()], ("writer",)) == ("writer", "browser")
    # The crash fault kills a bystander's programs: its pool must run one.
    assert setup_programs([CrashBlastRadiusCheck()]) != ()


def test_controls_shorten_only_the_observation_period() -> None:
    registered = ObservationPrivacyCheck(interval_s=0.5, min_pixels=900)
    short = for_controls(registered, 7.0)
    assert isinstance(short, ObservationPrivacyCheck)
    assert (short.duration_s, short.interval_s, short.min_pixels) == (7.0, 0.5, 900)
    assert registered.duration_s == DURATION_S  # the window's test is left as it was
    clipboard = ClipboardCheck()
    assert for_controls(clipboard, 7.0) is clipboard


def test_the_holder_and_typist_rotate() -> None:
    envs = ["env01", "env02", "env03"]
    assert [rotation(envs, t) for t in range(3)] == [
        ("env01", "env02"),
        ("env02", "env03"),
        ("env03", "env01"),
    ]


def _phase(modifier: str, effects: dict[str, E | None], landed: bool = True) -> set[RowResult]:
    rows = phase_rows("modifier_leak", 0, 1, modifier, "env01", "env02", effects, landed)
    return {r.result for r in rows}


def test_the_word_as_typed_in_the_typists_document_is_clean() -> None:
    assert _phase("shift", {"env01": E.MISSING, "env02": E.EXACT}) == {RowResult.CLEAN}


def test_capitals_anywhere_are_cross() -> None:
    assert _phase("shift", {"env01": E.MISSING, "env02": E.SHIFTED}) == {RowResult.CROSS}


def test_a_missing_word_while_ctrl_is_held_is_cross() -> None:
    assert _phase("ctrl", {"env01": E.MISSING, "env02": E.MISSING}) == {RowResult.CROSS}


def test_a_missing_word_is_lost_not_cross_when_the_typists_own_check_did_not_land() -> None:
    # A loaded or broken environment drops keys with nothing held: that proves no leak.
    assert _phase("ctrl", {"env01": E.MISSING, "env02": E.MISSING}, False) == {RowResult.LOST}


def test_a_missing_word_while_shift_is_held_is_lost() -> None:
    assert _phase("shift", {"env01": E.MISSING, "env02": E.MISSING}) == {RowResult.LOST}


def test_an_unsaved_typist_document_is_lost() -> None:
    assert _phase("shift", {"env01": E.MISSING, "env02": None}) == {RowResult.LOST}


def test_the_word_landing_in_another_document_is_cross() -> None:
    assert RowResult.CROSS in _phase("shift", {"env01": E.EXACT, "env02": E.MISSING})


def test_a_setup_run_again_in_a_later_round_gets_a_folder_of_its_own(tmp_path: Path) -> None:
    """The cover runs a setup again for a test that has not fired yet: its first run's
    folder (and database) stays as it was."""
    first = _fresh_folder(tmp_path, "shared-home")
    first.mkdir()
    second = _fresh_folder(tmp_path, "shared-home")
    second.mkdir()
    assert (first.name, second.name) == ("shared-home", "shared-home-2")
    assert _fresh_folder(tmp_path, "shared-home").name == "shared-home-3"
