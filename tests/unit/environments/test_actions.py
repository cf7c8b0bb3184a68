"""Parsing policy actions strictly from JSON."""

from __future__ import annotations

import pytest

from cleanroom.environments.actions import Click, Focus, SetClipboard, TypeText, parse_action
from cleanroom.environments.errors import BadAction
from cleanroom.environments.x11.keys import parse_hotkey


def test_a_type_action_keeps_its_text() -> None:
    assert parse_action({"kind": "type", "text": "env01-w001-r0001-0a1b2c3d"}) == TypeText(
        "type", "env01-w001-r0001-0a1b2c3d"
    )


def test_a_click_defaults_to_one_left_click() -> None:
    assert parse_action({"kind": "click", "x": 3, "y": 4}) == Click("click", 3, 4, 1, 1)


def test_focus_by_program_is_accepted() -> None:
    assert parse_action({"kind": "focus", "program": "writer"}) == Focus("focus", None, "writer")


def test_focus_needs_exactly_one_target() -> None:
    with pytest.raises(BadAction, match="exactly one"):
        parse_action({"kind": "focus", "program": "writer", "window_id": 4})


def test_set_clipboard_accepts_both_selections() -> None:
    action = parse_action({"kind": "set_clipboard", "text": "x", "selections": ["PRIMARY"]})
    assert action == SetClipboard("set_clipboard", "x", ("PRIMARY",))


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "fly"},
        {"kind": "type"},
        {"kind": "type", "text": "bell\x07"},
        {"kind": "click", "x": "1", "y": 2},
        {"kind": "click", "x": True, "y": 2},
        {"kind": "key_down", "key": "nosuchkey"},
        {"kind": "set_clipboard", "text": "x", "selections": ["SECONDARY"]},
        ["type"],
    ],
)
def test_malformed_actions_are_rejected_with_a_reason(bad: object) -> None:
    with pytest.raises(BadAction):
        parse_action(bad)


def test_a_hotkey_is_pressed_in_the_order_written() -> None:
    ctrl, s = parse_hotkey("ctrl+s")
    assert ctrl == 0xFFE3 and s == ord("s")
