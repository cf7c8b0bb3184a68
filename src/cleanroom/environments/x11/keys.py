"""Pure keyboard logic: which keysym a character or key name means.

Kept apart from the X connection so it can be tested without a display.
"""

from __future__ import annotations

from Xlib import XK

from cleanroom.environments.errors import BadAction

# Names a policy may use for keys, beyond X keysym names (which are accepted as they are).
KEY_ALIASES: dict[str, str] = {
    "ctrl": "Control_L",
    "control": "Control_L",
    "shift": "Shift_L",
    "alt": "Alt_L",
    "super": "Super_L",
    "meta": "Meta_L",
    "enter": "Return",
    "return": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "backspace": "BackSpace",
    "delete": "Delete",
    "space": "space",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "home": "Home",
    "end": "End",
    "pageup": "Prior",
    "pagedown": "Next",
}


def keysym_for_char(ch: str) -> int:
    """The keysym that types ``ch``: Latin-1 maps to itself, the rest to Unicode keysyms."""
    if len(ch) != 1:
        raise BadAction(f"one character expected, got {ch!r}")
    if ch == "\n":
        return XK.string_to_keysym("Return")
    if ch == "\t":
        return XK.string_to_keysym("Tab")
    code = ord(ch)
    if code < 0x20 or code == 0x7F:
        raise BadAction(f"cannot type control character {ch!r}")
    if code <= 0xFF:
        return code
    return 0x01000000 + code


def keysym_for_name(name: str) -> int:
    """The keysym a key name means: an alias (``ctrl``), an X name (``F5``) or one character."""
    if not name:
        raise BadAction("empty key name")
    alias = KEY_ALIASES.get(name.lower())
    keysym = XK.string_to_keysym(alias or name)
    if keysym:
        return keysym
    if len(name) == 1:
        return keysym_for_char(name)
    raise BadAction(f"unknown key name {name!r}")


def parse_hotkey(combo: str) -> list[int]:
    """``ctrl+shift+s`` as keysyms in press order (modifiers first, as written)."""
    parts = combo.split("+") if combo != "+" else ["+"]
    if any(not p for p in parts):
        raise BadAction(f"malformed hotkey {combo!r}")
    return [keysym_for_name(p) for p in parts]
