"""The one table of isolation checks: every check once, under the name run databases store."""

from __future__ import annotations

import pytest

from cleanroom.harness.loop import load_battery
from cleanroom.isolation.checks import CHECKS, _table
from cleanroom.isolation.checks.clipboard import ClipboardCheck

STORED_NAMES = {
    "clipboard",
    "keyboard_storm",
    "modifier_leak",
    "dialog_steal",
    "observation_privacy",
    "files_and_prefs",
    "reset_during_write",
    "stale_generation",
    "crash_blast_radius",
    "channels",
    "token_sweep",
    "noisy_neighbor",
}


def test_the_table_holds_every_check_under_its_own_stored_name() -> None:
    assert set(CHECKS) == STORED_NAMES
    assert all(check.name == name for name, check in CHECKS.items())
    assert len({check.number for check in CHECKS.values()}) == len(CHECKS)


def test_a_check_named_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="clipboard"):
        _table(ClipboardCheck(), ClipboardCheck())


def test_the_loop_gets_a_copy_of_the_table() -> None:
    battery = load_battery()
    assert battery == CHECKS
    battery.pop("clipboard")
    assert "clipboard" in CHECKS
