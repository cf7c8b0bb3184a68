"""The isolation checks, one module each, and `CHECKS`, the one table of them.

Each check module defines one `IsolationCheck`; this table is the only list of them, so
adding a check is writing its module and naming it here. The modules beside them that
are not checks are their helpers (`writer_steps`, `holdings`, `dialog_views`,
`together`, and the programs checks run inside each sandbox: `channel_probe` for
channels, `noisy_hog` for noisy_neighbor). The names in the table are the names
stored in run databases.
"""

from __future__ import annotations

from cleanroom.isolation.battery import IsolationCheck
from cleanroom.isolation.checks.channels import ChannelsCheck
from cleanroom.isolation.checks.clipboard import ClipboardCheck
from cleanroom.isolation.checks.crash_blast_radius import CrashBlastRadiusCheck
from cleanroom.isolation.checks.dialog_steal import DialogStealCheck
from cleanroom.isolation.checks.files_and_prefs import FilesAndPrefsCheck
from cleanroom.isolation.checks.keyboard_storm import KeyboardStormCheck
from cleanroom.isolation.checks.modifier_leak import ModifierLeakCheck
from cleanroom.isolation.checks.noisy_neighbor import NoisyNeighborCheck
from cleanroom.isolation.checks.observation_privacy import ObservationPrivacyCheck
from cleanroom.isolation.checks.reset_during_write import ResetDuringWriteCheck
from cleanroom.isolation.checks.stale_generation import StaleGenerationCheck
from cleanroom.isolation.checks.token_sweep import TokenSweepCheck


def _table(*checks: IsolationCheck) -> dict[str, IsolationCheck]:
    """The checks by name; two checks with one name are a fault of the table."""
    table: dict[str, IsolationCheck] = {}
    for check in checks:
        if check.name in table:
            raise ValueError(f"isolation test {check.name!r} is in the table twice")
        table[check.name] = check
    return table


CHECKS: dict[str, IsolationCheck] = _table(
    ClipboardCheck(),
    KeyboardStormCheck(),
    ModifierLeakCheck(),
    DialogStealCheck(),
    ObservationPrivacyCheck(),
    FilesAndPrefsCheck(),
    ResetDuringWriteCheck(),
    StaleGenerationCheck(),
    CrashBlastRadiusCheck(),
    ChannelsCheck(),
    TokenSweepCheck(),
    NoisyNeighborCheck(),
)


def observing_for(test: IsolationCheck, seconds: float) -> IsolationCheck:
    """``test`` with observation privacy watching for ``seconds`` instead of its window's
    period (the controls and the demo's short window); any other test as it is."""
    if not isinstance(test, ObservationPrivacyCheck):
        return test
    return ObservationPrivacyCheck(
        duration_s=seconds,
        interval_s=test.interval_s,
        clock_line_px=test.clock_line_px,
        min_pixels=test.min_pixels,
    )
