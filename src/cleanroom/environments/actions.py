"""The actions a policy may take, as plain data, parsed strictly from JSON.

Pure: no display is touched here. The controller applies an `Action` after checking its
environment and generation, by calling its `apply` with the environment as an
`ActionTarget`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from cleanroom.environments.errors import BadAction
from cleanroom.environments.x11.keys import keysym_for_char, keysym_for_name, parse_hotkey

MAX_TYPE_CHARS = 4096
# The two X selections every environment has, by their X names.
SELECTIONS = ("CLIPBOARD", "PRIMARY")


@dataclass(frozen=True)
class ClipboardRead:
    """What one read returned: the text, or None when nobody owns the selection;
    ``truncated`` when the owner offered more than the harness reads (the text is then
    the first part only)."""

    selection: str
    text: str | None
    truncated: bool = False


@runtime_checkable
class ActionTarget(Protocol):
    """One environment as an action applies to it (`actions.Action.apply`)."""

    def type_text(self, text: str) -> None: ...
    def key_down(self, key: str) -> None: ...
    def key_up(self, key: str) -> None: ...
    def hotkey(self, keys: str) -> None: ...
    def click(self, x: int, y: int, button: int, count: int) -> None: ...
    def move(self, x: int, y: int) -> None: ...
    def focus_window(self, window_id: int) -> None: ...
    def focus_program(self, program: str) -> None: ...
    def set_clipboard(self, text: str, selections: tuple[str, ...]) -> None: ...
    def clear_clipboard(self) -> None: ...
    def read_clipboard(self, selection: str = "CLIPBOARD") -> ClipboardRead: ...


@dataclass(frozen=True)
class Action:
    """Base of every action; ``kind`` names it on the wire."""

    kind: str

    def to_json(self) -> dict[str, Any]:
        """The wire form."""
        return asdict(self)

    def apply(self, target: ActionTarget) -> str | None:
        """Carry the action out on ``target``; what it reads, if anything."""
        raise BadAction(f"unknown action {self.kind!r}")


@dataclass(frozen=True)
class TypeText(Action):
    text: str

    def apply(self, target: ActionTarget) -> str | None:
        target.type_text(self.text)
        return None


@dataclass(frozen=True)
class KeyDown(Action):
    key: str

    def apply(self, target: ActionTarget) -> str | None:
        target.key_down(self.key)
        return None


@dataclass(frozen=True)
class KeyUp(Action):
    key: str

    def apply(self, target: ActionTarget) -> str | None:
        target.key_up(self.key)
        return None


@dataclass(frozen=True)
class Hotkey(Action):
    keys: str

    def apply(self, target: ActionTarget) -> str | None:
        target.hotkey(self.keys)
        return None


@dataclass(frozen=True)
class Click(Action):
    x: int
    y: int
    button: int = 1
    count: int = 1

    def apply(self, target: ActionTarget) -> str | None:
        target.click(self.x, self.y, self.button, self.count)
        return None


@dataclass(frozen=True)
class Move(Action):
    x: int
    y: int

    def apply(self, target: ActionTarget) -> str | None:
        target.move(self.x, self.y)
        return None


@dataclass(frozen=True)
class Focus(Action):
    """Activate a window: by id, or the window of a program (``writer``, ``terminal``...)."""

    window_id: int | None = None
    program: str | None = None

    def apply(self, target: ActionTarget) -> str | None:
        if self.program is not None:
            target.focus_program(self.program)
        elif self.window_id is not None:
            target.focus_window(self.window_id)
        return None


@dataclass(frozen=True)
class SetClipboard(Action):
    text: str
    selections: tuple[str, ...] = ("CLIPBOARD",)

    def apply(self, target: ActionTarget) -> str | None:
        target.set_clipboard(self.text, self.selections)
        return None


@dataclass(frozen=True)
class GetClipboard(Action):
    selection: str = "CLIPBOARD"

    def apply(self, target: ActionTarget) -> str | None:
        return target.read_clipboard(self.selection).text


@dataclass(frozen=True)
class ClearClipboard(Action):
    """Leave both selections without an owner: the harness's own action (a control's
    undo), never parsed from a policy's request."""

    def apply(self, target: ActionTarget) -> str | None:
        target.clear_clipboard()
        return None


def _field(data: dict[str, Any], name: str, kind: type, default: Any = ...) -> Any:
    if name not in data:
        if default is ...:
            raise BadAction(f"{data.get('kind')!r} needs {name!r}")
        return default
    value = data[name]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise BadAction(f"{name!r} must be an integer, got {value!r}")
    if kind is str and not isinstance(value, str):
        raise BadAction(f"{name!r} must be a string, got {value!r}")
    return value


def parse_action(data: Any) -> Action:
    """Build an action from its JSON form; raise `BadAction` naming what is wrong."""
    if not isinstance(data, dict):
        raise BadAction("an action is a JSON object")
    kind = data.get("kind")
    if kind == "type":
        text = _field(data, "text", str)
        if len(text) > MAX_TYPE_CHARS:
            raise BadAction(f"at most {MAX_TYPE_CHARS} characters per type action")
        for ch in text:
            keysym_for_char(ch)
        return TypeText(kind, text)
    if kind in ("key_down", "key_up"):
        key = _field(data, "key", str)
        keysym_for_name(key)
        return KeyDown(kind, key) if kind == "key_down" else KeyUp(kind, key)
    if kind == "hotkey":
        keys = _field(data, "keys", str)
        parse_hotkey(keys)
        return Hotkey(kind, keys)
    if kind == "click":
        return Click(
            kind,
            _field(data, "x", int),
            _field(data, "y", int),
            _field(data, "button", int, 1),
            _field(data, "count", int, 1),
        )
    if kind == "move":
        return Move(kind, _field(data, "x", int), _field(data, "y", int))
    if kind == "focus":
        window_id = _field(data, "window_id", int, None)
        program = _field(data, "program", str, None)
        if (window_id is None) == (program is None):
            raise BadAction("focus needs exactly one of 'window_id' or 'program'")
        return Focus(kind, window_id, program)
    if kind == "set_clipboard":
        text = _field(data, "text", str)
        selections = data.get("selections", ["CLIPBOARD"])
        if not isinstance(selections, list | tuple) or not selections:
            raise BadAction("'selections' must be a non-empty list")
        for s in selections:
            if s not in SELECTIONS:
                raise BadAction(f"unknown selection {s!r}; use {', '.join(SELECTIONS)}")
        return SetClipboard(kind, text, tuple(selections))
    if kind == "get_clipboard":
        selection = _field(data, "selection", str, "CLIPBOARD")
        if selection not in SELECTIONS:
            raise BadAction(f"unknown selection {selection!r}; use {', '.join(SELECTIONS)}")
        return GetClipboard(kind, selection)
    raise BadAction(f"unknown action kind {kind!r}")
