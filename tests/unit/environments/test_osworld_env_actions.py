"""OSWorld's action spaces parsed strictly and translated into policy actions (pure: no
display). Where OSWorld's own package (``desktop_env``) is importable too, its action schema
and key list are compared with the ones here; elsewhere that one test skips."""

from __future__ import annotations

from typing import Any

import pytest
from Xlib import XK

from cleanroom.environments.actions import (
    MAX_TYPE_CHARS,
    Click,
    Hotkey,
    KeyDown,
    KeyUp,
    Move,
    TypeText,
    parse_action,
)
from cleanroom.environments.errors import BadAction
from cleanroom.environments.osworld_env.actions import (
    ACTION_SPACES,
    KEYBOARD_KEYS,
    PYAUTOGUI_PREFIX,
    PYAUTOGUI_X11_KEYSYMS,
    SCHEMA,
    UNPRESSED_KEYS,
    BadOSWorldAction,
    ComputerAction,
    Control,
    PointerCode,
    PyautoguiCode,
    Translated,
    Unsupported,
    computer_13_outcome,
    outcome,
    parse_computer_13,
    parse_pyautogui,
    rewrite_less_than,
    step_action,
    translate,
    translate_pyautogui,
    x_keysym_name,
)
from cleanroom.environments.x11.keys import keysym_for_name

SCREEN = (1920, 1080)


def _do(data: Any, screen: tuple[int, int] = SCREEN) -> Any:
    result = computer_13_outcome(data, screen=screen)
    if isinstance(result, Translated):
        for action in result.actions:  # every translation is an action the policy API takes
            assert parse_action(action.to_json()) == action
    return result


# -- every computer_13 kind, valid --------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"action_type": "MOVE_TO", "x": 10, "y": 20}, Translated((Move("move", 10, 20),))),
        ({"action_type": "MOVE_TO", "x": 10.9, "y": 0.2}, Translated((Move("move", 10, 0),))),
        (
            {"action_type": "CLICK", "x": 5, "y": 6},
            Translated((Click("click", 5, 6, 1, 1),)),
        ),
        (
            {"action_type": "CLICK", "button": "right", "x": 5, "y": 6, "num_clicks": 3},
            Translated((Click("click", 5, 6, 3, 3),)),
        ),
        (
            {"action_type": "CLICK", "button": "middle", "x": 5, "y": 6},
            Translated((Click("click", 5, 6, 2, 1),)),
        ),
        (
            {"action_type": "CLICK", "x": 5, "y": 6, "num_clicks": 2},
            Translated((Click("click", 5, 6, 1, 2),)),
        ),
        (
            {"action_type": "RIGHT_CLICK", "x": 7, "y": 8},
            Translated((Click("click", 7, 8, 3, 1),)),
        ),
        (
            {"action_type": "DOUBLE_CLICK", "x": 7, "y": 8},
            Translated((Click("click", 7, 8, 1, 2),)),
        ),
        (
            {"action_type": "TYPING", "text": "Hello, world!"},
            Translated((TypeText("type", "Hello, world!"),)),
        ),
        ({"action_type": "TYPING", "text": ""}, Translated(())),
        ({"action_type": "PRESS", "key": "enter"}, Translated((Hotkey("hotkey", "Return"),))),
        ({"action_type": "PRESS", "key": "a"}, Translated((TypeText("type", "a"),))),
        (
            {"action_type": "KEY_DOWN", "key": "ctrl"},
            Translated((KeyDown("key_down", "Control_L"),)),
        ),
        ({"action_type": "KEY_UP", "key": "ctrl"}, Translated((KeyUp("key_up", "Control_L"),))),
        (
            {"action_type": "HOTKEY", "keys": ["ctrl", "shift", "s"]},
            Translated((Hotkey("hotkey", "Control_L+Shift_L+s"),)),
        ),
        ({"action_type": "WAIT"}, Control("WAIT", as_string=False)),
        ({"action_type": "FAIL"}, Control("FAIL", as_string=False)),
        ({"action_type": "DONE"}, Control("DONE", as_string=False)),
    ],
)
def test_each_kind_translates_to_policy_actions(data: dict[str, Any], expected: Any) -> None:
    assert _do(data) == expected


@pytest.mark.parametrize(
    ("data", "calls"),
    [
        ({"action_type": "CLICK"}, ["pyautogui.click()"]),
        ({"action_type": "CLICK", "button": "left"}, ["pyautogui.click(button='left')"]),
        (
            {"action_type": "CLICK", "button": "left", "num_clicks": 2},
            ["pyautogui.click(button='left', clicks=2)"],
        ),
        ({"action_type": "RIGHT_CLICK"}, ["pyautogui.rightClick()"]),
        ({"action_type": "DOUBLE_CLICK"}, ["pyautogui.doubleClick()"]),
        ({"action_type": "MOUSE_DOWN"}, ["pyautogui.mouseDown()"]),
        ({"action_type": "MOUSE_DOWN", "button": "right"}, ["pyautogui.mouseDown(button='right')"]),
        ({"action_type": "MOUSE_UP"}, ["pyautogui.mouseUp()"]),
        ({"action_type": "MOUSE_UP", "button": "middle"}, ["pyautogui.mouseUp(button='middle')"]),
        (
            {"action_type": "DRAG_TO", "x": 100, "y": 200},
            ["pyautogui.dragTo(100, 200, duration=1.0, button='left', mouseDownUp=True)"],
        ),
        (
            {"action_type": "SCROLL", "dx": 0, "dy": -5},
            ["pyautogui.hscroll(0)", "pyautogui.vscroll(-5)"],
        ),
    ],
)
def test_pointer_actions_the_policy_api_lacks_are_osworlds_own_pyautogui_calls(
    data: dict[str, Any], calls: list[str]
) -> None:
    result = _do(data)
    assert isinstance(result, PointerCode)
    assert [c.command for c in result.codes] == calls


def test_an_agents_less_than_is_rewritten_as_osworld_rewrites_it() -> None:
    assert rewrite_less_than("pyautogui.press('<')") == 'pyautogui.hotkey("shift", ",")'
    assert rewrite_less_than("pyautogui.typewrite('a<b<')") == (
        'pyautogui.typewrite(\'a\'); pyautogui.hotkey("shift", ","); '
        'pyautogui.typewrite(\'b\'); pyautogui.hotkey("shift", ",")'
    )
    # Untouched: no '<', another function, an unquoted argument.
    for code in ("pyautogui.typewrite('a>b')", "pyautogui.write('<')", "pyautogui.typewrite(x)"):
        assert rewrite_less_than(code) == code
    # Escapes are decoded where a '<' is found, as OSWorld decodes them.
    assert rewrite_less_than(r"pyautogui.typewrite('\u003c')") == 'pyautogui.hotkey("shift", ",")'


def test_parameters_may_sit_under_parameters() -> None:
    nested = {"action_type": "CLICK", "parameters": {"x": 1, "y": 2, "button": "left"}}
    assert _do(nested) == Translated((Click("click", 1, 2, 1, 1),))
    assert parse_computer_13(nested, screen=SCREEN) == ComputerAction(
        "CLICK", {"x": 1, "y": 2, "button": "left"}
    )
    assert _do({"action_type": "WAIT", "parameters": {}}) == Control("WAIT", as_string=False)


def test_coordinates_are_truncated_and_the_far_edge_is_the_last_pixel() -> None:
    # pyautogui int()s coordinates; OSWorld's range includes the screen's width itself.
    edge = {"action_type": "CLICK", "x": 1920, "y": 1080.0}
    assert _do(edge) == Translated((Click("click", 1919, 1079, 1, 1),))
    assert _do({"action_type": "MOVE_TO", "x": 0.99, "y": 1079.99}) == Translated(
        (Move("move", 0, 1079),)
    )


def test_ranges_follow_the_screen_given() -> None:
    small = (1280, 800)
    assert _do({"action_type": "MOVE_TO", "x": 1280, "y": 800}, small) == Translated(
        (Move("move", 1279, 799),)
    )
    with pytest.raises(BadOSWorldAction, match=r"\[0, 1280\]"):
        parse_computer_13({"action_type": "MOVE_TO", "x": 1281, "y": 0}, screen=small)
    with pytest.raises(BadOSWorldAction, match=r"\[0, 800\]"):
        parse_computer_13({"action_type": "DRAG_TO", "x": 0, "y": 1000}, screen=small)


@pytest.mark.parametrize("screen", [(0, 800), (1280, -1), (1280.0, 800), (True, 800)])
def test_a_screen_is_two_positive_integers(screen: Any) -> None:
    with pytest.raises(ValueError):
        parse_computer_13({"action_type": "WAIT"}, screen=screen)


# -- every computer_13 kind, invalid ------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (["CLICK"], "JSON object"),
        (None, "JSON object"),
        (42, "JSON object"),
        ("CLICK", "one of WAIT, FAIL, DONE"),
        ("done", "one of WAIT, FAIL, DONE"),
        ({}, "needs 'action_type'"),
        ({"x": 1, "y": 2}, "needs 'action_type'"),
        ({"action_type": "TAP"}, "unknown action_type"),
        ({"action_type": "click", "x": 1, "y": 2}, "unknown action_type"),
        ({"action_type": ["CLICK"]}, "unknown action_type"),
        ({"action_type": None}, "unknown action_type"),
        # MOVE_TO
        ({"action_type": "MOVE_TO"}, "needs 'x'"),
        ({"action_type": "MOVE_TO", "x": 1}, "needs 'y'"),
        ({"action_type": "MOVE_TO", "x": "1", "y": 2}, "must be a number"),
        ({"action_type": "MOVE_TO", "x": True, "y": 2}, "must be a number"),
        ({"action_type": "MOVE_TO", "x": None, "y": 2}, "must be a number"),
        ({"action_type": "MOVE_TO", "x": -1, "y": 2}, "must lie in"),
        ({"action_type": "MOVE_TO", "x": 1921, "y": 2}, "must lie in"),
        ({"action_type": "MOVE_TO", "x": 1, "y": 1080.5}, "must lie in"),
        ({"action_type": "MOVE_TO", "x": float("nan"), "y": 2}, "must lie in"),
        ({"action_type": "MOVE_TO", "x": float("inf"), "y": 2}, "must lie in"),
        ({"action_type": "MOVE_TO", "x": 1, "y": 2, "duration": 1}, "takes no 'duration'"),
        # CLICK
        ({"action_type": "CLICK", "x": 1}, "x and y together"),
        ({"action_type": "CLICK", "y": 1}, "x and y together"),
        ({"action_type": "CLICK", "button": "left", "x": 1}, "x and y together"),
        ({"action_type": "CLICK", "num_clicks": 2}, "num_clicks only with"),
        ({"action_type": "CLICK", "button": "LEFT"}, "must be one of left, middle, right"),
        ({"action_type": "CLICK", "button": 1}, "must be one of"),
        ({"action_type": "CLICK", "button": ["left"]}, "must be one of"),
        ({"action_type": "CLICK", "x": 1, "y": 2, "num_clicks": 4}, "must be 1, 2 or 3"),
        ({"action_type": "CLICK", "x": 1, "y": 2, "num_clicks": 0}, "must be 1, 2 or 3"),
        ({"action_type": "CLICK", "x": 1, "y": 2, "num_clicks": 2.0}, "must be 1, 2 or 3"),
        ({"action_type": "CLICK", "x": 1, "y": 2, "num_clicks": True}, "must be 1, 2 or 3"),
        ({"action_type": "CLICK", "x": 1, "y": 2, "clicks": 2}, "takes no 'clicks'"),
        # MOUSE_DOWN, MOUSE_UP
        ({"action_type": "MOUSE_DOWN", "button": "wheel"}, "must be one of"),
        ({"action_type": "MOUSE_UP", "button": None}, "must be one of"),
        ({"action_type": "MOUSE_DOWN", "x": 1, "y": 2}, "takes no 'x'"),
        # RIGHT_CLICK, DOUBLE_CLICK
        ({"action_type": "RIGHT_CLICK", "x": 1}, "x and y together"),
        ({"action_type": "RIGHT_CLICK", "x": 1, "y": 2, "button": "left"}, "takes no 'button'"),
        ({"action_type": "DOUBLE_CLICK", "y": 1}, "x and y together"),
        ({"action_type": "DOUBLE_CLICK", "x": 1, "y": 2, "num_clicks": 2}, "takes no"),
        ({"action_type": "DOUBLE_CLICK", "x": 1, "y": 5000}, "must lie in"),
        # DRAG_TO
        ({"action_type": "DRAG_TO"}, "needs 'x'"),
        ({"action_type": "DRAG_TO", "x": 1}, "needs 'y'"),
        ({"action_type": "DRAG_TO", "x": 1, "y": "2"}, "must be a number"),
        # SCROLL
        ({"action_type": "SCROLL", "dy": 3}, "needs 'dx'"),
        ({"action_type": "SCROLL", "dx": 3}, "needs 'dy'"),
        ({"action_type": "SCROLL", "dx": 0, "dy": 1.5}, "must be an integer"),
        ({"action_type": "SCROLL", "dx": False, "dy": 1}, "must be an integer"),
        ({"action_type": "SCROLL", "dx": 0, "dy": "3"}, "must be an integer"),
        ({"action_type": "SCROLL", "dx": 0, "dy": 1, "x": 5}, "takes no 'x'"),
        # TYPING
        ({"action_type": "TYPING"}, "needs 'text'"),
        ({"action_type": "TYPING", "text": 5}, "must be a string"),
        ({"action_type": "TYPING", "text": ["a"]}, "must be a string"),
        ({"action_type": "TYPING", "text": "a", "interval": 0.1}, "takes no 'interval'"),
        # PRESS, KEY_DOWN, KEY_UP
        ({"action_type": "PRESS"}, "needs 'key'"),
        ({"action_type": "PRESS", "key": "nosuchkey"}, "not one of OSWorld's KEYBOARD_KEYS"),
        ({"action_type": "PRESS", "key": "Control_L"}, "not one of OSWorld's KEYBOARD_KEYS"),
        ({"action_type": "PRESS", "key": ""}, "not one of OSWorld's KEYBOARD_KEYS"),
        ({"action_type": "PRESS", "key": "é"}, "not one of OSWorld's KEYBOARD_KEYS"),
        ({"action_type": "PRESS", "key": 5}, "not one of OSWorld's KEYBOARD_KEYS"),
        ({"action_type": "PRESS", "key": ["enter"]}, "not one of OSWorld's KEYBOARD_KEYS"),
        ({"action_type": "KEY_DOWN", "key": "ctrl+c"}, "not one of OSWorld's KEYBOARD_KEYS"),
        ({"action_type": "KEY_UP", "key": None}, "not one of OSWorld's KEYBOARD_KEYS"),
        ({"action_type": "KEY_UP"}, "needs 'key'"),
        ({"action_type": "PRESS", "keys": ["a"]}, "takes no 'keys'"),
        # HOTKEY
        ({"action_type": "HOTKEY"}, "needs 'keys'"),
        ({"action_type": "HOTKEY", "keys": []}, "non-empty list"),
        ({"action_type": "HOTKEY", "keys": "ctrl+c"}, "non-empty list"),
        ({"action_type": "HOTKEY", "keys": ("ctrl", "c")}, "non-empty list"),
        ({"action_type": "HOTKEY", "keys": ["ctrl", "nosuchkey"]}, "KEYBOARD_KEYS"),
        ({"action_type": "HOTKEY", "keys": ["ctrl", 3]}, "KEYBOARD_KEYS"),
        ({"action_type": "HOTKEY", "key": "ctrl"}, "takes no 'key'"),
        # WAIT, FAIL, DONE
        ({"action_type": "WAIT", "seconds": 2}, "WAIT takes no 'seconds'"),
        ({"action_type": "DONE", "parameters": {"ok": True}}, "DONE takes no 'ok'"),
        ({"action_type": "FAIL", "reason": "x"}, "FAIL takes no 'reason'"),
        # the parameters object
        ({"action_type": "CLICK", "parameters": [1, 2]}, "must be an object"),
        ({"action_type": "CLICK", "parameters": {"x": 1}, "y": 2}, "beside 'parameters'"),
    ],
)
def test_malformed_actions_are_refused_with_a_reason(data: Any, reason: str) -> None:
    with pytest.raises(BadOSWorldAction, match=reason):
        parse_computer_13(data, screen=SCREEN)


def test_a_refusal_is_a_bad_action_of_the_pool() -> None:
    with pytest.raises(BadAction):
        computer_13_outcome({"action_type": "TAP"}, screen=SCREEN)


# -- keys ---------------------------------------------------------------------------------


def test_osworlds_key_list_is_whole_and_unique() -> None:
    assert len(KEYBOARD_KEYS) == 193 and len(set(KEYBOARD_KEYS)) == 193


@pytest.mark.parametrize("key", KEYBOARD_KEYS)
def test_every_osworld_key_presses_pyautoguis_keysym_or_nothing(key: str) -> None:
    name = x_keysym_name(key)
    if key in UNPRESSED_KEYS:
        assert name is None
        for kind in ("PRESS", "KEY_DOWN", "KEY_UP"):
            assert _do({"action_type": kind, "key": key}) == Translated((), (key,))
        return
    assert name is not None
    # cleanroom's key names take it, and mean the keysym pyautogui asks X for by that name.
    assert keysym_for_name(name) == XK.string_to_keysym(name) != 0
    pressed = _do({"action_type": "PRESS", "key": key})
    assert isinstance(pressed, Translated) and pressed.unpressed == ()
    if len(key) == 1 and key.isprintable():
        assert pressed.actions == (TypeText("type", key),)
    else:
        assert pressed.actions == (Hotkey("hotkey", name),)
    assert _do({"action_type": "KEY_DOWN", "key": key}) == Translated((KeyDown("key_down", name),))
    assert _do({"action_type": "KEY_UP", "key": key}) == Translated((KeyUp("key_up", name),))
    assert _do({"action_type": "HOTKEY", "keys": ["ctrl", key]}) == Translated(
        (Hotkey("hotkey", f"Control_L+{name}"),)
    )


def test_the_keys_pyautogui_presses_nothing_for_on_x11() -> None:
    assert set(UNPRESSED_KEYS) == {
        "accept", "browserback", "browserfavorites", "browserforward", "browserhome",
        "browserrefresh", "browsersearch", "browserstop", "clear", "convert", "final", "fn",
        "hanguel", "hangul", "hanja", "junja", "kana", "kanji", "launchapp1", "launchapp2",
        "launchmail", "launchmediaselect", "modechange", "nexttrack", "nonconvert",
        "playpause", "prevtrack", "sleep", "stop", "volumedown", "volumemute", "volumeup",
        "yen", "command", "option", "optionleft", "optionright",
    }  # fmt: skip


def test_key_names_are_taken_in_any_case_single_characters_as_written() -> None:
    assert _do({"action_type": "PRESS", "key": "Enter"}) == Translated(
        (Hotkey("hotkey", "Return"),)
    )
    assert _do({"action_type": "KEY_DOWN", "key": "CTRL"}) == Translated(
        (KeyDown("key_down", "Control_L"),)
    )
    assert _do({"action_type": "PRESS", "key": "F5"}) == Translated((Hotkey("hotkey", "F5"),))
    # pyautogui presses Shift for an upper-case letter: typing it does the same.
    assert _do({"action_type": "PRESS", "key": "A"}) == Translated((TypeText("type", "A"),))
    assert _do({"action_type": "KEY_DOWN", "key": "A"}) == Translated((KeyDown("key_down", "A"),))
    assert _do({"action_type": "HOTKEY", "keys": ["Ctrl", "Shift", "T"]}) == Translated(
        (Hotkey("hotkey", "Control_L+Shift_L+T"),)
    )


def test_a_plus_in_a_hotkey_is_named_not_written() -> None:
    assert _do({"action_type": "HOTKEY", "keys": ["ctrl", "+"]}) == Translated(
        (Hotkey("hotkey", "Control_L+plus"),)
    )


def test_a_hotkey_leaves_out_the_keys_pyautogui_cannot_press() -> None:
    assert _do({"action_type": "HOTKEY", "keys": ["fn", "f5"]}) == Translated(
        (Hotkey("hotkey", "F5"),), ("fn",)
    )
    assert _do({"action_type": "HOTKEY", "keys": ["volumeup", "VolumeMute"]}) == Translated(
        (), ("volumeup", "VolumeMute")
    )


def test_control_characters_are_keys_not_text() -> None:
    assert _do({"action_type": "PRESS", "key": "\n"}) == Translated((Hotkey("hotkey", "Return"),))
    assert _do({"action_type": "PRESS", "key": "\r"}) == Translated((Hotkey("hotkey", "Return"),))
    assert _do({"action_type": "PRESS", "key": "\t"}) == Translated((Hotkey("hotkey", "Tab"),))
    assert _do({"action_type": "PRESS", "key": " "}) == Translated((TypeText("type", " "),))


def test_the_keysym_table_covers_every_printable_ascii_character() -> None:
    for code in range(0x20, 0x7F):
        assert chr(code) in PYAUTOGUI_X11_KEYSYMS


# -- typing -------------------------------------------------------------------------------


def test_typing_types_what_pyautogui_types_and_lists_what_it_skips() -> None:
    result = _do({"action_type": "TYPING", "text": "a<b>\tc\r\nd\be\x01é中"})
    assert result == Translated(
        (TypeText("type", "a<b>\tc\n\nd"), Hotkey("hotkey", "BackSpace"), TypeText("type", "e")),
        ("\x01", "é", "中"),
    )


def test_long_typing_is_cut_into_type_actions_the_policy_api_takes() -> None:
    text = "x" * (2 * MAX_TYPE_CHARS + 5)
    result = _do({"action_type": "TYPING", "text": text})
    assert isinstance(result, Translated)
    assert [len(a.text) for a in result.actions if isinstance(a, TypeText)] == [
        MAX_TYPE_CHARS,
        MAX_TYPE_CHARS,
        5,
    ]


def test_typing_only_characters_pyautogui_skips_types_nothing() -> None:
    assert _do({"action_type": "TYPING", "text": "日本"}) == Translated((), ("日", "本"))


# -- WAIT, FAIL, DONE in both spaces ------------------------------------------------------


@pytest.mark.parametrize("kind", ["WAIT", "FAIL", "DONE"])
def test_control_actions_in_both_spaces_and_both_forms(kind: str) -> None:
    as_string = Control(kind, as_string=True)
    as_object = Control(kind, as_string=False)
    assert outcome("computer_13", kind, screen=SCREEN) == as_string
    assert outcome("computer_13", {"action_type": kind}, screen=SCREEN) == as_object
    assert outcome("pyautogui", kind, screen=SCREEN) == as_string
    assert outcome("pyautogui", {"action_type": kind}, screen=SCREEN) == as_object
    assert parse_pyautogui(kind) == as_string


def test_what_each_control_action_means() -> None:
    assert not Control("WAIT").done and Control("WAIT").info() == {}
    assert Control("FAIL").done and Control("FAIL").info() == {"fail": True}
    assert Control("DONE").done and Control("DONE").info() == {"done": True}
    assert Control("FAIL", as_string=False).done


def test_control_strings_are_exact() -> None:
    # OSWorld compares the whole string: anything else is code to run.
    for near in ("done", " DONE", "DONE\n", "Done"):
        assert parse_pyautogui(near) == PyautoguiCode(near)


# -- pyautogui ----------------------------------------------------------------------------


def test_pyautogui_code_is_unsupported_until_code_can_run_inside() -> None:
    code = "pyautogui.click(100, 200)"
    parsed = parse_pyautogui(code)
    assert parsed == PyautoguiCode(code)
    assert translate_pyautogui(parsed) == Unsupported(
        "pyautogui", ("run_python",), "runs Python code in the desktop"
    )
    assert outcome("pyautogui", code, screen=SCREEN) == translate_pyautogui(parsed)


def test_the_program_is_osworlds_prefix_and_the_code() -> None:
    code = "pyautogui.typewrite('hi')"
    assert PyautoguiCode(code).program() == (
        "import pyautogui; import time; pyautogui.FAILSAFE = False; " + code
    )
    assert PyautoguiCode(code).program() == PYAUTOGUI_PREFIX + code


def test_a_pyautogui_object_carries_its_code_in_command() -> None:
    action = {"action_type": "tool_use", "command": "pyautogui.press('a')", "id": "x1"}
    assert parse_pyautogui(action) == PyautoguiCode("pyautogui.press('a')")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (None, "string or an object"),
        (["pyautogui.click()"], "string or an object"),
        (b"DONE", "string or an object"),
        ({"command": "pyautogui.click()"}, "string 'action_type'"),
        ({"action_type": 1, "command": "pyautogui.click()"}, "string 'action_type'"),
        ({"action_type": "tool_use"}, "string 'command'"),
        ({"action_type": "tool_use", "command": ["pyautogui.click()"]}, "string 'command'"),
    ],
)
def test_malformed_pyautogui_actions_are_refused(data: Any, reason: str) -> None:
    with pytest.raises(BadOSWorldAction, match=reason):
        parse_pyautogui(data)


def test_an_unknown_action_space_is_refused() -> None:
    with pytest.raises(BadOSWorldAction, match="unknown action space"):
        outcome("mcp", "DONE", screen=SCREEN)


# -- what DesktopEnv.step does, per action space ------------------------------------------

# The Claude agent's action: its tool call, and the pyautogui code it became in ``command``.
CLAUDE_CLICK = {
    "name": "computer",
    "input": {"action": "left_click", "coordinate": [100, 200]},
    "id": "toolu_01",
    "action_type": "tool_use",
    "command": "pyautogui.click(100, 200)\n",
}


@pytest.mark.parametrize("space", ["pyautogui", "claude_computer_use", "autoglm_computer_use"])
def test_a_code_space_runs_a_code_string_as_pyautogui(space: str) -> None:
    assert step_action(space, "pyautogui.click(1, 2)", screen=SCREEN) == PyautoguiCode(
        "pyautogui.click(1, 2)"
    )


def test_the_claude_space_runs_the_command_of_a_tool_use_action() -> None:
    result = step_action("claude_computer_use", CLAUDE_CLICK, screen=SCREEN)
    assert result == PyautoguiCode("pyautogui.click(100, 200)\n")


@pytest.mark.parametrize("space", ["pyautogui", "claude_computer_use", "autoglm_computer_use"])
def test_a_code_spaces_code_is_rewritten_for_less_than_as_osworlds_step_does(space: str) -> None:
    result = step_action(space, "pyautogui.typewrite('a<b')", screen=SCREEN)
    assert result == PyautoguiCode(rewrite_less_than("pyautogui.typewrite('a<b')"))
    assert isinstance(result, PyautoguiCode) and "<" not in result.command


@pytest.mark.parametrize("space", ["pyautogui", "claude_computer_use", "autoglm_computer_use"])
@pytest.mark.parametrize("kind", ["WAIT", "FAIL", "DONE"])
def test_a_code_spaces_control_strings_press_nothing(space: str, kind: str) -> None:
    assert step_action(space, kind, screen=SCREEN) == Control(kind, as_string=True)


def test_the_computer_13_space_is_translated_in_step() -> None:
    action = {"action_type": "CLICK", "x": 10, "y": 20}
    assert step_action("computer_13", action, screen=SCREEN) == computer_13_outcome(
        action, screen=SCREEN
    )


@pytest.mark.parametrize("space", ["claude_computer_use", "autoglm_computer_use"])
def test_a_code_spaces_object_without_code_is_refused(space: str) -> None:
    with pytest.raises(BadOSWorldAction, match="command"):
        step_action(space, {"name": "computer", "action_type": "tool_use"}, screen=SCREEN)


def test_step_refuses_an_unknown_action_space_by_name() -> None:
    with pytest.raises(BadOSWorldAction, match="'mcp'"):
        step_action("mcp", "pyautogui.click()", screen=SCREEN)


def test_the_action_spaces_are_osworlds() -> None:
    assert set(ACTION_SPACES) == {
        "computer_13",
        "pyautogui",
        "claude_computer_use",
        "autoglm_computer_use",
    }


def test_translate_takes_a_parsed_action() -> None:
    parsed = parse_computer_13({"action_type": "PRESS", "key": "esc"}, screen=SCREEN)
    assert translate(parsed, screen=SCREEN) == Translated((Hotkey("hotkey", "Escape"),))


# -- against OSWorld's own package, where it is installed ---------------------------------


def test_the_schema_is_osworlds() -> None:
    osworld = pytest.importorskip("desktop_env.actions")
    assert tuple(osworld.KEYBOARD_KEYS) == KEYBOARD_KEYS
    theirs = {entry["action_type"]: entry.get("parameters", {}) for entry in osworld.ACTION_SPACE}
    assert list(theirs) == list(SCHEMA)
    types = {"x": float, "y": float, "button": str, "num_clicks": int, "amount": int}
    types |= {"text": str, "key": str, "keys": list}
    for action_type, params in theirs.items():
        ours = SCHEMA[action_type]
        assert list(params) == list(ours), action_type
        for name, spec in params.items():
            assert spec["optional"] == ours[name].optional, (action_type, name)
            assert spec["type"] is types[ours[name].kind], (action_type, name)
            if ours[name].kind == "button":
                assert spec["range"] == ["left", "right", "middle"]
            if ours[name].kind == "num_clicks":
                assert spec["range"] == [1, 2, 3]
            if ours[name].kind in ("x", "y"):
                limit = osworld.X_MAX if ours[name].kind == "x" else osworld.Y_MAX
                assert spec["range"] == [0, limit]
