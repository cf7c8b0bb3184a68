"""The published-number rule: no zero without a positive control that fired."""

from __future__ import annotations

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.publish import (
    NOT_CLAIMED,
    ControlResult,
    Publication,
    Refusal,
    clipboard_gate,
    not_claimed,
    publish,
    skew_summary,
)

FIRED = ControlResult(typing_cross=7, typing_trials=10, clipboard_cross=4, clipboard_trials=10)
CLEAN = [IsolationRow("clipboard", t, "env01", "env02", RowResult.CLEAN, 1) for t in range(5)]
PROVEN = {
    "clipboard": ["shared-clipboard"],
    "keyboard_storm": ["shared-display"],
    "canaries": ["planted: env00's clipboard set"],
}


def test_a_clean_run_with_a_fired_control_publishes_zero_next_to_the_control() -> None:
    result = publish(CLEAN, env_hours=3.0, controls=[FIRED], proven=PROVEN)
    assert isinstance(result, Publication)
    assert result.events == 0
    assert result.text.startswith("0 of 3.00 environment-hours")
    assert "11 of 20" in result.text
    assert result.checks == {"clipboard": 5}
    assert result.not_claimed == NOT_CLAIMED
    assert result.proven == {"clipboard": ["shared-clipboard"]}


def test_without_a_control_the_number_is_refused() -> None:
    result = publish(CLEAN, env_hours=3.0, controls=[], proven=PROVEN)
    assert isinstance(result, Refusal)
    assert "has not run" in result.reason


def test_a_control_that_fired_on_one_half_only_refuses_the_number() -> None:
    half = ControlResult(typing_cross=9, typing_trials=10, clipboard_cross=0, clipboard_trials=10)
    result = publish(CLEAN, env_hours=3.0, controls=[half], proven=PROVEN)
    assert isinstance(result, Refusal)
    assert "did not fire" in result.reason
    assert "clipboard 0 of 10" in result.reason


def test_lost_rows_refuse_the_number_and_name_the_window() -> None:
    rows = [*CLEAN, IsolationRow("keyboard_storm", 0, "env01", "env03", RowResult.LOST, 2)]
    result = publish(rows, env_hours=3.0, controls=[FIRED], proven=PROVEN)
    assert isinstance(result, Refusal)
    assert result.failed_windows == [2]
    assert "keyboard_storm" in result.reason


def test_cross_rows_are_published_as_events() -> None:
    rows = [*CLEAN, IsolationRow("clipboard", 9, "env02", "env01", RowResult.CROSS, 1)]
    result = publish(rows, env_hours=2.5, controls=[FIRED], proven=PROVEN)
    assert isinstance(result, Publication)
    assert result.events == 1
    assert result.text.startswith("1 of 2.50")


def test_nothing_measured_is_refused_not_printed_as_zero() -> None:
    assert isinstance(publish([], env_hours=3.0, controls=[FIRED], proven=PROVEN), Refusal)
    assert isinstance(publish(CLEAN, env_hours=0.0, controls=[FIRED], proven=PROVEN), Refusal)


def test_a_canary_event_refuses_the_number_and_names_the_window() -> None:
    rows = [*CLEAN, IsolationRow("canaries", 0, "unknown", "env00", RowResult.CROSS, 1)]
    result = publish(rows, env_hours=3.0, controls=[FIRED], proven=PROVEN)
    assert isinstance(result, Refusal)
    assert result.failed_windows == [1]
    assert "canary event" in result.reason


def test_an_interrupted_window_refuses_the_number() -> None:
    result = publish(
        CLEAN, env_hours=3.0, controls=[FIRED], proven=PROVEN, unfinished={1: "interrupted"}
    )
    assert isinstance(result, Refusal)
    assert result.failed_windows == [1]
    assert "interrupted before its checks ended" in result.reason


def test_a_later_control_that_did_not_fire_refuses_even_after_one_that_fired() -> None:
    blind = ControlResult(typing_cross=0, typing_trials=10, clipboard_cross=0, clipboard_trials=10)
    result = publish(CLEAN, env_hours=3.0, controls=[FIRED, blind], proven=PROVEN)
    assert isinstance(result, Refusal)
    assert "did not fire" in result.reason and "1 earlier run(s) of it fired" in result.reason


def test_the_latest_control_is_the_one_printed_beside_the_number() -> None:
    blind = ControlResult(typing_cross=0, typing_trials=10, clipboard_cross=0, clipboard_trials=10)
    later = ControlResult(typing_cross=3, typing_trials=3, clipboard_cross=20, clipboard_trials=20)
    result = publish(CLEAN, env_hours=3.0, controls=[FIRED, blind, later], proven=PROVEN)
    assert isinstance(result, Publication)
    assert result.control == later and "23 of 23" in result.text


def test_a_counted_check_without_a_control_that_fired_in_this_run_refuses_the_number() -> None:
    rows = [*CLEAN, IsolationRow("dialog_steal", 0, "env01", "env02", RowResult.CLEAN, 1)]
    proven = {**PROVEN, "dialog_steal": []}  # its control ran and did not fire
    result = publish(rows, env_hours=3.0, controls=[FIRED], proven=proven)
    assert isinstance(result, Refusal)
    assert "1 of the 2 checks" in result.reason and "(dialog_steal)" in result.reason
    assert "none of their leaky or planted controls fired" in result.reason


def test_a_run_without_its_controls_refuses_and_says_why() -> None:
    why = "the leaky controls were not run (--no-leaky-controls)"
    result = publish(CLEAN, env_hours=3.0, controls=[FIRED], proven={}, why_unproven=why)
    assert isinstance(result, Refusal)
    assert result.reason.endswith(why)


def test_reduced_trial_counts_are_in_the_number_line_itself() -> None:
    result = publish(CLEAN, env_hours=0.07, controls=[FIRED], proven=PROVEN, trials_scale=0.1)
    assert isinstance(result, Publication)
    assert result.text.startswith("0 of 0.07 environment-hours at 0.1x the planned trials:")
    full = publish(CLEAN, env_hours=0.07, controls=[FIRED], proven=PROVEN)
    assert isinstance(full, Publication) and "planned trials" not in full.text


def test_the_not_claimed_list_names_the_limits_the_scale_and_how_each_check_was_proven() -> None:
    lines = not_claimed(["clipboard", "dialog_steal"], PROVEN, trials_scale=0.1)
    assert NOT_CLAIMED in lines
    assert any("not that a real leak would leave its trace" in line for line in lines)
    assert any("0.1x the planned trials" in line for line in lines)
    assert "clipboard: proven in this run by shared-clipboard" in lines
    assert "dialog_steal: not proven in this run, so nothing is claimed for it" in lines


def test_clipboard_trials_whose_sets_were_over_100_ms_apart_do_not_count() -> None:
    skews = [5.0, 100.0, 250.0, 40.0]
    crossed = [True, False, True, False]
    # The 250 ms trial cross-read, but it tested a slower race than the control claims.
    assert clipboard_gate(skews, crossed) == (1, 3)
    result = ControlResult(3, 3, *clipboard_gate(skews, crossed), clipboard_skew_ms=tuple(skews))
    assert result.clipboard_trials == 3 and result.fired


def test_a_clipboard_half_whose_only_crossings_were_too_far_apart_does_not_fire() -> None:
    cross, counted = clipboard_gate([300.0, 20.0], [True, False])
    assert not ControlResult(3, 3, cross, counted).fired


def test_the_skew_summary_gives_the_distribution_and_what_was_not_counted() -> None:
    line = skew_summary([1.0, 2.0, 3.0, 150.0])
    assert "min 1.0 ms" in line and "max 150.0 ms" in line
    assert "1 of 4 over 100 ms (not counted)" in line
    assert skew_summary([]) == "no clipboard trials"
