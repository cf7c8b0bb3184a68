"""The positive control: two Writers in one session must show cross-delivery."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.isolation.controls.positive import run_control


@pytest.mark.slow
def test_two_windows_of_one_display_show_cross_delivery_in_both_halves(tmp_path: Path) -> None:
    result, evidence = run_control(tmp_path, typing_rounds=2, chars=30, clipboard_trials=10)
    assert result.typing_cross > 0, evidence.saved
    assert result.clipboard_cross > 0, evidence.clipboard_reads
    assert result.fired
    assert max(evidence.set_skew_ms) < 100
