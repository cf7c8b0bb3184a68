"""Every isolation test module, imported so that `battery.TESTS` is complete.

Each module registers its test when imported; import this module (not the tests one by
one) wherever the whole battery is needed.
"""

from __future__ import annotations

from cleanroom.isolation import (  # noqa: F401  (imported for their registration)
    tests_channels,
    tests_clipboard,
    tests_crash_blast_radius,
    tests_dialog_steal,
    tests_files_and_prefs,
    tests_keyboard_storm,
    tests_modifier_leak,
    tests_observation_privacy,
    tests_reset_during_write,
    tests_stale_generation,
    tests_token_sweep,
)
from cleanroom.isolation.battery import TESTS

__all__ = ["TESTS"]
