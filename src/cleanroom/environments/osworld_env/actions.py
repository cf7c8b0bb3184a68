"""OSWorld's two action spaces as plain data: parsed strictly, then translated into the
policy actions of `policy.actions`.

Pure: no display is touched here. OSWorld's ``DesktopEnv.step`` takes an action in one of
two spaces:

- ``computer_13``: an object ``{"action_type": ..., <parameters>}`` (the parameters may
  also sit under ``"parameters"``), one of the kinds of OSWorld's ``ACTION_SPACE`` with
  exactly its parameters, or ``WAIT``, ``FAIL``, ``DONE``;
- ``pyautogui``: Python code that OSWorld's server runs in the desktop, or one of the
  strings ``WAIT``, ``FAIL``, ``DONE``;
- ``claude_computer_use`` (OSWorld's Claude agent: a ``tool_use`` object whose
  ``command`` is the pyautogui code its tool call became) and ``autoglm_computer_use``
  (the AutoGLM agent: code strings): OSWorld's ``step`` runs an action of either as a
  ``pyautogui`` one (`CODE_SPACES`, `step_action`).

`parse_computer_13` refuses what OSWorld's schema does not allow (`BadOSWorldAction`,
naming the action and the fault), with coordinates checked against the screen.
`translate` turns a parsed action into one outcome:

- `Translated`: the policy actions that do what OSWorld's controller does, in order. Keys
  are pressed as pyautogui 0.9.54 (the version OSWorld's server runs) presses them on X11:
  a key or character it has no keysym for is pressed by neither, and is listed in
  ``unpressed``;
- `PointerCode`: the pointer actions the policy API has no action for (a click where
  the pointer is, a held button, a drag, the wheel): the pyautogui calls OSWorld's
  controller sends its server for them, to be run in the environment as its server runs
  them (one program per call);
- `Control`: ``WAIT``, ``FAIL`` or ``DONE``, which press nothing.

For the ``pyautogui`` space, `rewrite_less_than` is the rewrite OSWorld's ``step`` makes
of the agent's code before running it. `Unsupported` names what a policy-API-only
consumer cannot do (`MISSING`): run Python code.
"""

from __future__ import annotations

import contextlib
import math
import re
import string
from dataclasses import dataclass, field
from typing import Any

from cleanroom.environments.actions import (
    MAX_TYPE_CHARS,
    Action,
    Click,
    Hotkey,
    KeyDown,
    KeyUp,
    Move,
    TypeText,
)
from cleanroom.environments.errors import BadAction

ACTION_SPACES = ("computer_13", "pyautogui", "claude_computer_use", "autoglm_computer_use")
# The spaces whose actions are pyautogui code. OSWorld 1.0.2's ``step`` runs the Claude
# agent's space as pyautogui and accepts AutoGLM's without running anything of it (its
# code was dropped); OSWorld's later ``step`` runs both as pyautogui, which is what their
# agents expect, and what is done here.
CODE_SPACES = ("pyautogui", "claude_computer_use", "autoglm_computer_use")
CONTROL_TYPES = ("WAIT", "FAIL", "DONE")

# OSWorld's key names (pyautogui's KEY_NAMES), in OSWorld's order (desktop_env/actions.py).
KEYBOARD_KEYS: tuple[str, ...] = (
    "\t", "\n", "\r", " ", "!", '"', "#", "$", "%", "&", "'", "(", ")", "*", "+", ",",
    "-", ".", "/", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", ":", ";", "<", "=",
    ">", "?", "@", "[", "\\", "]", "^", "_", "`", "a", "b", "c", "d", "e", "f", "g", "h",
    "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y",
    "z", "{", "|", "}", "~", "accept", "add", "alt", "altleft", "altright", "apps",
    "backspace", "browserback", "browserfavorites", "browserforward", "browserhome",
    "browserrefresh", "browsersearch", "browserstop", "capslock", "clear", "convert",
    "ctrl", "ctrlleft", "ctrlright", "decimal", "del", "delete", "divide", "down", "end",
    "enter", "esc", "escape", "execute", "f1", "f10", "f11", "f12", "f13", "f14", "f15",
    "f16", "f17", "f18", "f19", "f2", "f20", "f21", "f22", "f23", "f24", "f3", "f4", "f5",
    "f6", "f7", "f8", "f9", "final", "fn", "hanguel", "hangul", "hanja", "help", "home",
    "insert", "junja", "kana", "kanji", "launchapp1", "launchapp2", "launchmail",
    "launchmediaselect", "left", "modechange", "multiply", "nexttrack", "nonconvert",
    "num0", "num1", "num2", "num3", "num4", "num5", "num6", "num7", "num8", "num9",
    "numlock", "pagedown", "pageup", "pause", "pgdn", "pgup", "playpause", "prevtrack",
    "print", "printscreen", "prntscrn", "prtsc", "prtscr", "return", "right",
    "scrolllock", "select", "separator", "shift", "shiftleft", "shiftright", "sleep",
    "stop", "subtract", "tab", "up", "volumedown", "volumemute", "volumeup", "win",
    "winleft", "winright", "yen", "command", "option", "optionleft", "optionright",
)  # fmt: skip
_KEY_NAMES = frozenset(KEYBOARD_KEYS)

_PUNCTUATION_KEYSYMS = {
    " ": "space", "!": "exclam", '"': "quotedbl", "#": "numbersign", "$": "dollar",
    "%": "percent", "&": "ampersand", "'": "apostrophe", "(": "parenleft",
    ")": "parenright", "*": "asterisk", "+": "plus", ",": "comma", "-": "minus",
    ".": "period", "/": "slash", ":": "colon", ";": "semicolon", "<": "less",
    "=": "equal", ">": "greater", "?": "question", "@": "at", "[": "bracketleft",
    "\\": "backslash", "]": "bracketright", "^": "asciicircum", "_": "underscore",
    "`": "grave", "{": "braceleft", "|": "bar", "}": "braceright", "~": "asciitilde",
}  # fmt: skip
_NAMED_KEYSYMS = {
    "\t": "Tab", "\n": "Return", "\r": "Return", "\b": "BackSpace",
    "add": "KP_Add", "alt": "Alt_L", "altleft": "Alt_L", "altright": "Alt_R",
    "apps": "Menu", "backspace": "BackSpace", "capslock": "Caps_Lock",
    "ctrl": "Control_L", "ctrlleft": "Control_L", "ctrlright": "Control_R",
    "decimal": "KP_Decimal", "del": "Delete", "delete": "Delete", "divide": "KP_Divide",
    "down": "Down", "end": "End", "enter": "Return", "esc": "Escape", "escape": "Escape",
    "execute": "Execute", "help": "Help", "home": "Home", "insert": "Insert",
    "left": "Left", "multiply": "KP_Multiply", "numlock": "Num_Lock",
    "pagedown": "Page_Down", "pageup": "Page_Up", "pause": "Pause", "pgdn": "Page_Down",
    "pgup": "Page_Up", "print": "Print", "printscreen": "Print", "prntscrn": "Print",
    "prtsc": "Print", "prtscr": "Print", "return": "Return", "right": "Right",
    "scrolllock": "Scroll_Lock", "select": "Select", "separator": "KP_Separator",
    "shift": "Shift_L", "shiftleft": "Shift_L", "shiftright": "Shift_R", "space": "space",
    "subtract": "KP_Subtract", "tab": "Tab", "up": "Up", "win": "Super_L",
    "winleft": "Super_L", "winright": "Super_R",
    **{f"f{n}": f"F{n}" for n in range(1, 25)},
    **{f"num{n}": f"KP_{n}" for n in range(10)},
}  # fmt: skip

# The X keysym (by name) that pyautogui 0.9.54 presses on X11 for each key it knows
# (its ``keyboardMapping``): single characters as they are (``A`` too, with Shift) and
# names in lower case. A key of `KEYBOARD_KEYS` missing here is pressed by pyautogui as
# nothing at all (`UNPRESSED_KEYS`).
PYAUTOGUI_X11_KEYSYMS: dict[str, str] = {
    **{c: c for c in string.ascii_letters + string.digits},
    **_PUNCTUATION_KEYSYMS,
    **_NAMED_KEYSYMS,
}
UNPRESSED_KEYS: tuple[str, ...] = tuple(k for k in KEYBOARD_KEYS if k not in PYAUTOGUI_X11_KEYSYMS)

# What TYPING types with TypeText: the characters pyautogui types on X11 besides "\b"
# (BackSpace) and "\r" (Return, typed as "\n").
_TYPEABLE = frozenset(string.ascii_letters + string.digits + "".join(_PUNCTUATION_KEYSYMS))
_TYPED_AS_IS = _TYPEABLE | {"\t", "\n"}

BUTTONS = {"left": 1, "middle": 2, "right": 3}

# The policy actions OSWorld's actions need and the policy API does not have yet.
MISSING: dict[str, str] = {
    "run_python": "run Python code with pyautogui in the environment, as its user, on its "
    "display (every action of the pyautogui space but WAIT, FAIL and DONE)",
}

# What OSWorld's controller puts before a pyautogui action's code (``python -c``).
PYAUTOGUI_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "


class BadOSWorldAction(BadAction):
    """An action OSWorld's action space does not allow (unknown kind, parameter, type or
    value); the message names the action and the fault."""


@dataclass(frozen=True)
class _Param:
    kind: str  # "x", "y", "button", "num_clicks", "amount", "text", "key", "keys"
    optional: bool


_X, _Y = _Param("x", False), _Param("y", False)
_OPT_X, _OPT_Y = _Param("x", True), _Param("y", True)
_OPT_BUTTON = _Param("button", True)

# OSWorld's ACTION_SPACE: each kind's parameters, and whether each may be left out.
SCHEMA: dict[str, dict[str, _Param]] = {
    "MOVE_TO": {"x": _X, "y": _Y},
    "CLICK": {
        "button": _OPT_BUTTON,
        "x": _OPT_X,
        "y": _OPT_Y,
        "num_clicks": _Param("num_clicks", True),
    },
    "MOUSE_DOWN": {"button": _OPT_BUTTON},
    "MOUSE_UP": {"button": _OPT_BUTTON},
    "RIGHT_CLICK": {"x": _OPT_X, "y": _OPT_Y},
    "DOUBLE_CLICK": {"x": _OPT_X, "y": _OPT_Y},
    "DRAG_TO": {"x": _X, "y": _Y},
    "SCROLL": {"dx": _Param("amount", False), "dy": _Param("amount", False)},
    "TYPING": {"text": _Param("text", False)},
    "PRESS": {"key": _Param("key", False)},
    "KEY_DOWN": {"key": _Param("key", False)},
    "KEY_UP": {"key": _Param("key", False)},
    "HOTKEY": {"keys": _Param("keys", False)},
    "WAIT": {},
    "FAIL": {},
    "DONE": {},
}


@dataclass(frozen=True)
class ComputerAction:
    """One ``computer_13`` action that OSWorld's schema allows, its parameters as given.

    ``as_string``: a control action given as the bare string (``"FAIL"``) rather than as
    an object (``{"action_type": "FAIL"}``); OSWorld 1.0.2 treats the two differently
    (see `Control`)."""

    action_type: str
    parameters: dict[str, Any] = field(default_factory=dict)
    as_string: bool = False


@dataclass(frozen=True)
class PyautoguiCode:
    """One ``pyautogui`` action: Python code for OSWorld's server to run in the desktop."""

    command: str

    def program(self) -> str:
        """The program OSWorld's controller runs (``python -c``): its prefix, then the
        code as it is (an agent's code goes through `rewrite_less_than` first, as
        OSWorld's ``step`` does; its controller's own calls do not)."""
        return PYAUTOGUI_PREFIX + self.command


@dataclass(frozen=True)
class Translated:
    """Policy actions that do what the OSWorld action does, in order; none when it
    presses only keys or characters pyautogui has no keysym for (``unpressed``)."""

    actions: tuple[Action, ...]
    unpressed: tuple[str, ...] = ()


@dataclass(frozen=True)
class PointerCode:
    """A ``computer_13`` pointer action as the pyautogui calls OSWorld's controller sends
    its server (``desktop_env/controllers/python.py``, ``execute_action``), in order, one
    program each; the values in them are the action's, checked by `parse_computer_13`."""

    codes: tuple[PyautoguiCode, ...]


@dataclass(frozen=True)
class Unsupported:
    """An OSWorld action the policy API cannot do yet: ``needs`` names the missing policy
    actions (keys of `MISSING`), ``reason`` says what the action does."""

    action_type: str
    needs: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Control:
    """``WAIT``, ``FAIL`` or ``DONE``: the agent waits, gives the task up as infeasible,
    or says it is done. Nothing is pressed.

    OSWorld 1.0.2's ``step`` ends the episode (``done``, with ``info`` ``{"fail": True}``
    or ``{"done": True}``) and sleeps for ``WAIT`` only when the action is the bare
    string, and its ``evaluate`` counts a ``FAIL`` only as the bare string; an object
    (``as_string`` false) changes neither. `done` and `info` give the meaning of the
    action whatever its form; an adapter that copies 1.0.2 exactly checks ``as_string``.
    """

    kind: str
    as_string: bool = True

    @property
    def done(self) -> bool:
        """Whether the action ends the episode (``FAIL`` and ``DONE``)."""
        return self.kind != "WAIT"

    def info(self) -> dict[str, bool]:
        """``step``'s ``info`` for this action."""
        if self.kind == "FAIL":
            return {"fail": True}
        if self.kind == "DONE":
            return {"done": True}
        return {}


# What a computer_13 action does here, and what any action does for a policy-API-only caller.
ComputerOutcome = Translated | PointerCode | Control
Outcome = ComputerOutcome | Unsupported


# -- computer_13 ---------------------------------------------------------------------------


def parse_computer_13(data: Any, *, screen: tuple[int, int]) -> ComputerAction:
    """A ``computer_13`` action from its JSON form, its coordinates checked against
    ``screen`` (width, height); raise `BadOSWorldAction` naming what is wrong."""
    width, height = _screen(screen)
    if isinstance(data, str):
        if data in CONTROL_TYPES:
            return ComputerAction(data, {}, as_string=True)
        raise BadOSWorldAction(
            f"a computer_13 action is an object or one of WAIT, FAIL, DONE; got {data!r}"
        )
    if not isinstance(data, dict):
        raise BadOSWorldAction(f"a computer_13 action is a JSON object, got {type(data).__name__}")
    if "action_type" not in data:
        raise BadOSWorldAction("a computer_13 action needs 'action_type'")
    action_type = data["action_type"]
    if not isinstance(action_type, str) or action_type not in SCHEMA:
        raise BadOSWorldAction(f"unknown action_type {action_type!r}; use {', '.join(SCHEMA)}")
    if "parameters" in data:
        extra = [k for k in data if k not in ("action_type", "parameters")]
        if extra:
            raise BadOSWorldAction(
                f"{action_type}: {extra[0]!r} beside 'parameters'; give every parameter "
                "in 'parameters' or none there"
            )
        params = data["parameters"]
        if not isinstance(params, dict):
            raise BadOSWorldAction(f"{action_type}: 'parameters' must be an object")
    else:
        params = {k: v for k, v in data.items() if k != "action_type"}
    spec = SCHEMA[action_type]
    for name in params:
        if name not in spec:
            takes = ", ".join(spec) or "no parameters"
            raise BadOSWorldAction(f"{action_type} takes no {name!r}; it takes {takes}")
    for name, param in spec.items():
        if name in params:
            _check(action_type, name, param, params[name], width, height)
        elif not param.optional:
            raise BadOSWorldAction(f"{action_type} needs {name!r}")
    _check_together(action_type, params)
    return ComputerAction(action_type, dict(params))


def _screen(screen: tuple[int, int]) -> tuple[int, int]:
    width, height = screen
    for side in (width, height):
        if isinstance(side, bool) or not isinstance(side, int) or side < 1:
            raise ValueError(f"a screen is two positive integers, got {screen!r}")
    return width, height


def _check(action_type: str, name: str, param: _Param, value: Any, width: int, height: int) -> None:
    where = f"{action_type}: {name!r}"
    kind = param.kind
    if kind in ("x", "y"):
        limit = width if kind == "x" else height
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadOSWorldAction(f"{where} must be a number, got {value!r}")
        if not math.isfinite(value) or not 0 <= value <= limit:
            raise BadOSWorldAction(f"{where} must lie in [0, {limit}], got {value!r}")
    elif kind == "button":
        if not isinstance(value, str) or value not in BUTTONS:
            raise BadOSWorldAction(f"{where} must be one of {', '.join(BUTTONS)}, got {value!r}")
    elif kind == "num_clicks":
        if isinstance(value, bool) or not isinstance(value, int) or value not in (1, 2, 3):
            raise BadOSWorldAction(f"{where} must be 1, 2 or 3, got {value!r}")
    elif kind == "amount":
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadOSWorldAction(f"{where} must be an integer, got {value!r}")
    elif kind == "text":
        if not isinstance(value, str):
            raise BadOSWorldAction(f"{where} must be a string, got {value!r}")
    elif kind == "key":
        _check_key(where, value)
    elif kind == "keys":
        if not isinstance(value, list) or not value:
            raise BadOSWorldAction(f"{where} must be a non-empty list of keys, got {value!r}")
        for key in value:
            _check_key(where, key)
    else:  # pragma: no cover - the schema names only the kinds above
        raise AssertionError(kind)


def _check_key(where: str, key: Any) -> None:
    # OSWorld's controller checks ``key.lower()`` against its list (as pyautogui
    # lower-cases names), so ``Enter`` and ``A`` are keys too.
    if not isinstance(key, str) or key.lower() not in _KEY_NAMES:
        raise BadOSWorldAction(f"{where}: {key!r} is not one of OSWorld's KEYBOARD_KEYS")


def _check_together(action_type: str, params: dict[str, Any]) -> None:
    # What OSWorld's controller refuses beyond the schema: x without y (or y without x),
    # and CLICK's num_clicks with neither a button nor coordinates.
    if action_type in ("CLICK", "RIGHT_CLICK", "DOUBLE_CLICK") and ("x" in params) != (
        "y" in params
    ):
        raise BadOSWorldAction(f"{action_type} takes x and y together or neither")
    if action_type == "CLICK" and "num_clicks" in params and not ({"button", "x"} & set(params)):
        raise BadOSWorldAction("CLICK takes num_clicks only with a button or with x and y")


def translate(action: ComputerAction, *, screen: tuple[int, int]) -> ComputerOutcome:
    """What the policy API does for a parsed ``computer_13`` action on ``screen``."""
    width, height = _screen(screen)
    kind, p = action.action_type, action.parameters
    if kind in CONTROL_TYPES:
        return Control(kind, action.as_string)
    if kind == "MOVE_TO":
        return Translated((Move("move", *_pixel(p, width, height)),))
    if kind in ("CLICK", "RIGHT_CLICK", "DOUBLE_CLICK"):
        if "x" not in p:  # where the pointer is: pyautogui's own click
            return _pointer_code(kind, p)
        button = 3 if kind == "RIGHT_CLICK" else BUTTONS[p.get("button", "left")]
        count = 2 if kind == "DOUBLE_CLICK" else p.get("num_clicks", 1)
        return Translated((Click("click", *_pixel(p, width, height), button, count),))
    if kind in ("MOUSE_DOWN", "MOUSE_UP", "DRAG_TO", "SCROLL"):
        return _pointer_code(kind, p)
    if kind == "TYPING":
        return _typing(p["text"])
    if kind == "PRESS":
        return _press(p["key"])
    if kind in ("KEY_DOWN", "KEY_UP"):
        name = x_keysym_name(p["key"])
        if name is None:
            return Translated((), (p["key"],))
        held = KeyDown("key_down", name) if kind == "KEY_DOWN" else KeyUp("key_up", name)
        return Translated((held,))
    if kind == "HOTKEY":
        names = [(key, x_keysym_name(key)) for key in p["keys"]]
        pressed = [name for _, name in names if name is not None]
        unpressed = tuple(key for key, name in names if name is None)
        actions: tuple[Action, ...] = (Hotkey("hotkey", "+".join(pressed)),) if pressed else ()
        return Translated(actions, unpressed)
    raise AssertionError(kind)  # pragma: no cover - parse_computer_13 admits no other kind


def _pointer_code(kind: str, p: dict[str, Any]) -> PointerCode:
    """The calls OSWorld's controller makes for a pointer action the policy API lacks.
    The values are checked (numbers, a button of `BUTTONS`), so they are written into
    the code as the controller writes them, with ``str``."""
    calls: list[str]
    if kind in ("CLICK", "RIGHT_CLICK", "DOUBLE_CLICK"):
        clicks = {"CLICK": "click", "RIGHT_CLICK": "rightClick", "DOUBLE_CLICK": "doubleClick"}
        args = [f"button='{p['button']}'"] if kind == "CLICK" and "button" in p else []
        if kind == "CLICK" and "button" in p and "num_clicks" in p:
            args.append(f"clicks={p['num_clicks']}")
        calls = [f"pyautogui.{clicks[kind]}({', '.join(args)})"]
    elif kind in ("MOUSE_DOWN", "MOUSE_UP"):
        function = "mouseDown" if kind == "MOUSE_DOWN" else "mouseUp"
        args = [f"button='{p['button']}'"] if "button" in p else []
        calls = [f"pyautogui.{function}({', '.join(args)})"]
    elif kind == "DRAG_TO":
        calls = [
            f"pyautogui.dragTo({p['x']}, {p['y']}, duration=1.0, button='left', mouseDownUp=True)"
        ]
    else:  # SCROLL: the horizontal turn first, each its own call
        calls = [f"pyautogui.hscroll({p['dx']})"] if "dx" in p else []
        calls += [f"pyautogui.vscroll({p['dy']})"] if "dy" in p else []
    return PointerCode(tuple(PyautoguiCode(c) for c in calls))


def computer_13_outcome(data: Any, *, screen: tuple[int, int]) -> ComputerOutcome:
    """`parse_computer_13`, then `translate`."""
    return translate(parse_computer_13(data, screen=screen), screen=screen)


def x_keysym_name(key: str) -> str | None:
    """The X keysym name pyautogui 0.9.54 presses on X11 for OSWorld's ``key`` (names of
    more than one character in any case, as pyautogui lower-cases them); None when it
    presses nothing."""
    return PYAUTOGUI_X11_KEYSYMS.get(key.lower() if len(key) > 1 else key)


def _pixel(p: dict[str, Any], width: int, height: int) -> tuple[int, int]:
    # pyautogui truncates coordinates (int()); the X server keeps the pointer on the
    # screen, so OSWorld's own bound (x == width) lands on the last pixel.
    return min(int(p["x"]), width - 1), min(int(p["y"]), height - 1)


def _press(key: str) -> Translated:
    name = x_keysym_name(key)
    if name is None:
        return Translated((), (key,))
    if key in _TYPEABLE:
        # A printable character is typed, with Shift where it needs it, as pyautogui does.
        return Translated((TypeText("type", key),))
    return Translated((Hotkey("hotkey", name),))


def _typing(text: str) -> Translated:
    # pyautogui's typewrite presses each character it has a key for and skips the rest.
    actions: list[Action] = []
    run: list[str] = []
    unpressed: list[str] = []

    def flush() -> None:
        for start in range(0, len(run), MAX_TYPE_CHARS):
            actions.append(TypeText("type", "".join(run[start : start + MAX_TYPE_CHARS])))
        run.clear()

    for ch in text:
        if ch in _TYPED_AS_IS:
            run.append(ch)
        elif ch == "\r":
            run.append("\n")  # both are Return
        elif ch == "\b":
            flush()
            actions.append(Hotkey("hotkey", "BackSpace"))
        else:
            unpressed.append(ch)
    flush()
    return Translated(tuple(actions), tuple(unpressed))


# -- pyautogui -----------------------------------------------------------------------------


def parse_pyautogui(data: Any) -> PyautoguiCode | Control:
    """A ``pyautogui`` action: the strings ``WAIT``, ``FAIL``, ``DONE``, any other string
    (code), or an object with a string ``action_type`` and, unless that is a control
    action, the code as a string ``command`` (the object's other keys are an agent's own
    and are ignored, as OSWorld ignores them)."""
    if isinstance(data, str):
        return Control(data, as_string=True) if data in CONTROL_TYPES else PyautoguiCode(data)
    if not isinstance(data, dict):
        raise BadOSWorldAction(
            f"a pyautogui action is a string or an object, got {type(data).__name__}"
        )
    action_type = data.get("action_type")
    if not isinstance(action_type, str):
        raise BadOSWorldAction("a pyautogui action object needs a string 'action_type'")
    if action_type in CONTROL_TYPES:
        return Control(action_type, as_string=False)
    command = data.get("command")
    if not isinstance(command, str):
        raise BadOSWorldAction("a pyautogui action object needs its code as a string 'command'")
    return PyautoguiCode(command)


def step_action(
    action_space: str, data: Any, *, screen: tuple[int, int]
) -> PyautoguiCode | ComputerOutcome:
    """What OSWorld's ``DesktopEnv.step`` does with one action of ``action_space`` on
    ``screen``: a ``computer_13`` action parsed and translated; an action of a code space
    (`CODE_SPACES`) as the code to run, after `rewrite_less_than` as OSWorld's ``step``
    rewrites it, or a `Control`. `BadOSWorldAction` names what is wrong with it."""
    if action_space == "computer_13":
        return computer_13_outcome(data, screen=screen)
    if action_space in CODE_SPACES:
        parsed = parse_pyautogui(data)
        if isinstance(parsed, Control):
            return parsed
        return PyautoguiCode(rewrite_less_than(parsed.command))
    raise BadOSWorldAction(f"unknown action space {action_space!r}; use {', '.join(ACTION_SPACES)}")


def translate_pyautogui(action: PyautoguiCode | Control) -> Control | Unsupported:
    """What the policy API does for a parsed ``pyautogui`` action."""
    if isinstance(action, Control):
        return action
    return Unsupported("pyautogui", ("run_python",), "runs Python code in the desktop")


def outcome(action_space: str, data: Any, *, screen: tuple[int, int]) -> Outcome:
    """One action of any space, parsed and translated for a policy-API-only consumer."""
    if action_space == "computer_13":
        return computer_13_outcome(data, screen=screen)
    if action_space in CODE_SPACES:
        return translate_pyautogui(parse_pyautogui(data))
    raise BadOSWorldAction(f"unknown action space {action_space!r}; use {', '.join(ACTION_SPACES)}")


# -- OSWorld's rewrite of '<' ----------------------------------------------------------------

_PRESS_LESS_THAN = re.compile(r"""pyautogui\.press\(["'](?:<|\\u003c)["']\)""")
_TYPEWRITE = re.compile(r"""pyautogui\.typewrite\((["'])(.*?)\1\)""")
_SHIFT_COMMA = 'pyautogui.hotkey("shift", ",")'


def rewrite_less_than(code: str) -> str:
    """The agent's pyautogui code as OSWorld 1.0.2's ``step`` runs it.

    pyautogui types ``'<'`` as ``'>'`` on OSWorld's X keyboard, so OSWorld rewrites the
    code first (``desktop_env.desktop_env._fix_pyautogui_less_than_bug``): ``press('<')``
    (or its ``\\u003c`` escape) becomes shift and comma; a quoted ``typewrite`` whose
    text, after Python's ``unicode_escape`` decoding, holds ``'<'`` becomes the pieces
    around each ``'<'`` typed in the same quotes, with shift and comma between them, joined
    by ``'; '``. Its quirks are kept, since the desktop sees the rewritten code: the
    decoded text is what is typed (escapes are decoded, non-ASCII text is decoded byte by
    byte), and a text that cannot be decoded is used as it is. The differential suite
    compares this with OSWorld's function.
    """
    code = _PRESS_LESS_THAN.sub(_SHIFT_COMMA, code)
    return _TYPEWRITE.sub(_typewrite_pieces, code)


def _typewrite_pieces(match: re.Match[str]) -> str:
    quote, text = match.group(1), match.group(2)
    with contextlib.suppress(UnicodeDecodeError):
        text = text.encode("utf-8").decode("unicode_escape")
    if "<" not in text:
        return match.group(0)
    first, *rest = text.split("<")
    pieces = [f"pyautogui.typewrite({quote}{first}{quote})"] if first else []
    for piece in rest:
        pieces.append(_SHIFT_COMMA)
        if piece:
            pieces.append(f"pyautogui.typewrite({quote}{piece}{quote})")
    return "; ".join(pieces)
