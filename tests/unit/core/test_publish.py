"""The published-number rule: no zero without a positive control that fired."""

from __future__ import annotations

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.publish import NOT_CLAIMED, ControlResult, Publication, Refusal, publish

FIRED = ControlResult(typing_cross=7, typing_trials=10, clipboard_cross=4, clipboard_trials=10)
CLEAN = [IsolationRow("clipboard", t, "env01", "env02", RowResult.CLEAN, 1) for t in range(5)]


def test_a_clean_run_with_a_fired_control_publishes_zero_next_to_the_control() -> None:
    result = publish(CLEAN, env_hours=3.0, controls=[FIRED])
    assert isinstance(result, Publication)
    assert result.events == 0
    assert result.text.startswith("0 of 3.00 environment-hours")
    assert "11 of 20" in result.text
    assert result.checks == {"clipboard": 5}
    assert result.not_claimed == NOT_CLAIMED


def test_without_a_control_the_number_is_refused() -> None:
    result = publish(CLEAN, env_hours=3.0, controls=[])
    assert isinstance(result, Refusal)
    assert "has not run" in result.reason


def test_a_control_that_fired_on_one_half_only_refuses_the_number() -> None:
    half = ControlResult(typing_cross=9, typing_trials=10, clipboard_cross=0, clipboard_trials=10)
    result = publish(CLEAN, env_hours=3.0, controls=[half])
    assert isinstance(result, Refusal)
    assert "did not fire" in result.reason
    assert "clipboard 0 of 10" in result.reason


def test_lost_rows_refuse_the_number_and_name_the_window() -> None:
    rows = [*CLEAN, IsolationRow("keyboard_storm", 0, "env01", "env03", RowResult.LOST, 2)]
    result = publish(rows, env_hours=3.0, controls=[FIRED])
    assert isinstance(result, Refusal)
    assert result.failed_windows == [2]
    assert "keyboard_storm" in result.reason


def test_cross_rows_are_published_as_events() -> None:
    rows = [*CLEAN, IsolationRow("clipboard", 9, "env02", "env01", RowResult.CROSS, 1)]
    result = publish(rows, env_hours=2.5, controls=[FIRED])
    assert isinstance(result, Publication)
    assert result.events == 1
    assert result.text.startswith("1 of 2.50")


def test_nothing_measured_is_refused_not_printed_as_zero() -> None:
    assert isinstance(publish([], env_hours=3.0, controls=[FIRED]), Refusal)
    assert isinstance(publish(CLEAN, env_hours=0.0, controls=[FIRED]), Refusal)


def test_a_canary_event_refuses_the_number_and_names_the_window() -> None:
    rows = [*CLEAN, IsolationRow("canaries", 0, "unknown", "env00", RowResult.CROSS, 1)]
    result = publish(rows, env_hours=3.0, controls=[FIRED])
    assert isinstance(result, Refusal)
    assert result.failed_windows == [1]
    assert "canary event" in result.reason


def test_an_interrupted_window_refuses_the_number() -> None:
    result = publish(CLEAN, env_hours=3.0, controls=[FIRED], unfinished={1: "interrupted"})
    assert isinstance(result, Refusal)
    assert result.failed_windows == [1]
    assert "interrupted before its checks ended" in result.reason


def test_a_later_control_that_did_not_fire_refuses_even_after_one_that_fired() -> None:
    blind = ControlResult(typing_cross=0, typing_trials=10, clipboard_cross=0, clipboard_trials=10)
    result = publish(CLEAN, env_hours=3.0, controls=[FIRED, blind])
    assert isinstance(result, Refusal)
    assert "did not fire" in result.reason and "1 earlier run(s) of it fired" in result.reason


def test_the_latest_control_is_the_one_printed_beside_the_number() -> None:
    blind = ControlResult(typing_cross=0, typing_trials=10, clipboard_cross=0, clipboard_trials=10)
    later = ControlResult(typing_cross=3, typing_trials=3, clipboard_cross=20, clipboard_trials=20)
    result = publish(CLEAN, env_hours=3.0, controls=[FIRED, blind, later])
    assert isinstance(result, Publication)
    assert result.control == later and "23 of 23" in result.text
