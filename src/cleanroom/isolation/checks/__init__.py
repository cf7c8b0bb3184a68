"""The isolation checks, one module each, and `CHECKS`, the one table of them.

Each check module defines one `IsolationTest`; this table is the only list of them, so
adding a check is writing its module and naming it here. The modules beside them that
are not checks are their helpers (`writer_steps`, `holdings`, `dialog_views`,
`together`, and `channel_probe`, the program the channels check runs inside each
sandbox). The names in the table are the names stored in run databases.
"""

from __future__ import annotations

from cleanroom.isolation.battery import IsolationTest
from cleanroom.isolation.checks.channels import ChannelsTest
from cleanroom.isolation.checks.clipboard import ClipboardTest
from cleanroom.isolation.checks.crash_blast_radius import CrashBlastRadiusTest
from cleanroom.isolation.checks.dialog_steal import DialogStealTest
from cleanroom.isolation.checks.files_and_prefs import FilesAndPrefsTest
from cleanroom.isolation.checks.keyboard_storm import KeyboardStormTest
from cleanroom.isolation.checks.modifier_leak import ModifierLeakTest
from cleanroom.isolation.checks.observation_privacy import ObservationPrivacyTest
from cleanroom.isolation.checks.reset_during_write import ResetDuringWriteTest
from cleanroom.isolation.checks.stale_generation import StaleGenerationTest
from cleanroom.isolation.checks.token_sweep import TokenSweepTest


def _table(*checks: IsolationTest) -> dict[str, IsolationTest]:
    """The checks by name; two checks with one name are a fault of the table."""
    table: dict[str, IsolationTest] = {}
    for check in checks:
        if check.name in table:
            raise ValueError(f"isolation test {check.name!r} is in the table twice")
        table[check.name] = check
    return table


CHECKS: dict[str, IsolationTest] = _table(
    ClipboardTest(),
    KeyboardStormTest(),
    ModifierLeakTest(),
    DialogStealTest(),
    ObservationPrivacyTest(),
    FilesAndPrefsTest(),
    ResetDuringWriteTest(),
    StaleGenerationTest(),
    CrashBlastRadiusTest(),
    ChannelsTest(),
    TokenSweepTest(),
)


def observing_for(test: IsolationTest, seconds: float) -> IsolationTest:
    """``test`` with observation privacy watching for ``seconds`` instead of its window's
    period (the controls and the demo's short window); any other test as it is."""
    if not isinstance(test, ObservationPrivacyTest):
        return test
    return ObservationPrivacyTest(
        duration_s=seconds,
        interval_s=test.interval_s,
        clock_line_px=test.clock_line_px,
        min_pixels=test.min_pixels,
    )
