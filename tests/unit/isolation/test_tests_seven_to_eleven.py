"""Tests 7-11: their numbers, schedules and named leaks are the documented ones, and the pure
pieces they are built from (page colours, the writer's command, the faults) do their job."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.core.detectors import missing_tokens, unless_seen
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.tokens import scan_text
from cleanroom.environments.actions import TypeText
from cleanroom.environments.errors import StaleGeneration
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.memory import MemoryDesktops
from cleanroom.isolation.battery import Schedule
from cleanroom.isolation.checks import CHECKS
from cleanroom.isolation.checks.files_and_prefs import write_command
from cleanroom.isolation.checks.observation_privacy import PAGE_COLOURS, is_actor, page_colour
from cleanroom.isolation.checks.reset_during_write import clipboard_missing
from cleanroom.isolation.fault import Fault

EXPECTED = {
    "observation_privacy": (7, Schedule(window=1, soak=1), {Leak.SHARED_DISPLAY}),
    "files_and_prefs": (
        8,
        Schedule(window=3, soak=3, on_demand=True),
        {Leak.SHARED_HOME, Leak.SHARED_PROFILE},
    ),
    "reset_during_write": (
        9,
        Schedule(window=20, soak=20, on_demand=True),
        {Leak.SHARED_CLIPBOARD},
    ),
    "stale_generation": (10, Schedule(window=20, soak=100), set()),
    "crash_blast_radius": (
        11,
        Schedule(window=1, soak=1, on_demand=True),
        {Leak.SHARED_DISPLAY, Leak.SHARED_PROFILE, Leak.SHARED_RUNTIME_DIR, Leak.SHARED_HOME},
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_test_is_in_the_table_with_its_number_schedule_and_leaks(name: str) -> None:
    test = CHECKS[name]
    number, schedule, leaks = EXPECTED[name]
    assert (test.number, test.schedule, set(test.detects)) == (number, schedule, leaks)


def test_every_environment_gets_its_own_page_colour_and_odd_ones_act() -> None:
    envs = [f"env{i:02d}" for i in range(1, len(PAGE_COLOURS) + 1)]
    assert len({page_colour(e) for e in envs}) == len(envs)
    assert [e for e in envs[:4] if is_actor(e)] == ["env01", "env03"]


def test_the_writers_command_puts_each_token_in_its_own_place() -> None:
    cmd = write_command("tok-file", "tok-bookmark", "tok-palette", Path("/h/.config/lo"))
    assert "> Documents/files-and-prefs-tok-file.txt" in cmd
    assert "tok-bookmark' >> .config/gtk-3.0/bookmarks" in cmd
    assert 'draw:name="tok-palette"' in cmd
    assert "> '/h/.config/lo/user/config/files-and-prefs.soc'" in cmd


def test_every_fault_is_declared_by_exactly_one_check() -> None:
    declared = {f: [c.name for c in CHECKS.values() if f in c.faults] for f in Fault}
    assert declared == {
        Fault.GENERATION_CHECK_BYPASSED: ["stale_generation"],
        Fault.CRASH_HITS_BYSTANDER: ["crash_blast_radius"],
    }
    assert all(f.description for f in Fault)


def test_the_bypass_fault_lets_stale_generations_through_and_then_restores_the_check(
    tmp_path: Path,
) -> None:
    pool = MemoryDesktops(tmp_path, envs=2)
    pool.start()
    with pool.without_generation_check():
        pool.reset("env01")
        applied = pool.act("env01", 0, TypeText("type", "stale"))  # stale, and let through
    assert applied.generation == 0
    assert pool.generation("env01") == 1  # the generation raised inside is kept
    with pytest.raises(StaleGeneration):
        pool.act("env01", 0, TypeText("type", "stale"))


def test_each_test_names_the_programs_it_needs() -> None:
    needs = {name: CHECKS[name].needs for name in EXPECTED}
    assert needs == {
        "observation_privacy": ("browser",),
        "files_and_prefs": ("writer", "terminal"),
        "reset_during_write": ("writer",),
        "stale_generation": (),
        "crash_blast_radius": ("terminal",),
    }


# -- every trial must see its own signal, or it is lost ------------------------------------

W = "env01-w001-r50001-0000000a"  # the writer's three tokens
B = "env01-w001-r50002-0000000b"
P = "env01-w001-r50003-0000000c"


def _rows(*results: RowResult) -> list[IsolationRow]:
    return [IsolationRow("t", 0, "env01", f"env0{i + 2}", r, 1) for i, r in enumerate(results)]


def test_a_trial_that_missed_its_own_signal_has_lost_rows_but_keeps_a_cross_it_saw() -> None:
    rows = unless_seen(_rows(RowResult.CLEAN, RowResult.CROSS), "its own file was not found")
    assert [r.result for r in rows] == [RowResult.LOST, RowResult.CROSS]
    assert rows[0].detail == "its own file was not found"
    assert unless_seen(_rows(RowResult.CLEAN), None)[0].result is RowResult.CLEAN


def test_files_and_prefs_is_blind_when_its_own_places_do_not_show_all_three_tokens() -> None:
    own = scan_text(f"{W} {B}", "/home/env01")  # the palette's token is not found
    missing = missing_tokens([W, B, P], own, "env01's own places")
    assert missing is not None and P in missing and W not in missing
    assert missing_tokens([W, B, P], scan_text(f"{W} {B} {P}"), "env01's own places") is None


def test_reset_during_write_is_blind_when_its_clipboard_never_held_its_own_token() -> None:
    assert clipboard_missing("env01", None, W) is not None
    assert clipboard_missing("env01", "copied something else", W) is not None
    assert clipboard_missing("env01", f"copied {W}", W) is None
