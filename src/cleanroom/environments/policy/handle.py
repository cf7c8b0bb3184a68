"""The policy interface in Python: what a policy may do to its one environment.

A `PolicyHandle` is bound to one environment and remembers the generation it acts on;
every call sends that generation, so after someone else resets the environment the
handle's next action is refused (`StaleGeneration`) instead of landing in the new
generation. `LocalHandle` drives a `Pool` in this process; `HttpHandle` (in
`policy.http`) drives a pool behind the supervisor's HTTP API. Policies see only this.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from cleanroom.environments.actions import Action, parse_action
from cleanroom.environments.interface import (
    AccessibilityTree,
    Clipboard,
    Desktops,
    FocusedText,
    Observation,
    Screenshot,
    WindowList,
    Wire,
)


class PolicyHandle(ABC):
    """One environment, as a policy sees it."""

    env: str
    generation: int

    # -- the two primitives every implementation provides ---------------------------------

    @abstractmethod
    def act(self, action: dict[str, Any]) -> str | None:
        """Apply one action (its JSON form) at this handle's generation; what it read."""

    @abstractmethod
    def observe(self, kind: type[Observation]) -> Wire:
        """One observation of ``kind`` at this handle's generation, in its wire form."""

    @abstractmethod
    def reset(self) -> int:
        """Reset the environment; the handle moves to the new generation, which it returns."""

    @abstractmethod
    def refresh(self) -> int:
        """Adopt the environment's current generation (after a recovery by the watchdog)."""

    # -- conveniences built on them --------------------------------------------------------

    def screenshot(self) -> bytes:
        """The screen as PNG bytes."""
        data = self.observe(Screenshot)
        assert isinstance(data, bytes)
        return data

    def windows(self) -> list[dict[str, Any]]:
        """Top-level windows: id, title, wm_class, geometry."""
        data = self.observe(WindowList)
        assert isinstance(data, list)
        return data

    def focused_text(self) -> dict[str, Any]:
        """The focused accessible object: app, role, name, text, document_text."""
        data = self.observe(FocusedText)
        assert isinstance(data, dict)
        return data

    def accessibility_tree(self) -> str:
        """The environment's accessibility tree as OSWorld's XML (``obs["accessibility_tree"]``)."""
        data = self.observe(AccessibilityTree)
        assert isinstance(data, str)
        return data

    def clipboard(self) -> dict[str, str | None]:
        """Both selections as any client of the display would read them (an observation)."""
        data = self.observe(Clipboard)
        assert isinstance(data, dict)
        return data

    def type_text(self, text: str) -> None:
        """Type text into the focused window."""
        self.act({"kind": "type", "text": text})

    def key_down(self, key: str) -> None:
        """Hold a key down."""
        self.act({"kind": "key_down", "key": key})

    def key_up(self, key: str) -> None:
        """Release a key."""
        self.act({"kind": "key_up", "key": key})

    def hotkey(self, keys: str) -> None:
        """Press a combination such as ``ctrl+s``."""
        self.act({"kind": "hotkey", "keys": keys})

    def click(self, x: int, y: int, button: int = 1, count: int = 1) -> None:
        """Click at screen coordinates."""
        self.act({"kind": "click", "x": x, "y": y, "button": button, "count": count})

    def move(self, x: int, y: int) -> None:
        """Move the pointer."""
        self.act({"kind": "move", "x": x, "y": y})

    def focus(self, program: str | None = None, window_id: int | None = None) -> None:
        """Activate a program's window (``writer``, ``terminal``, ``browser``) or a window."""
        action: dict[str, Any] = {"kind": "focus"}
        if program is not None:
            action["program"] = program
        if window_id is not None:
            action["window_id"] = window_id
        self.act(action)

    def set_clipboard(self, text: str, selections: tuple[str, ...] = ("CLIPBOARD",)) -> None:
        """Own the clipboard with ``text``."""
        self.act({"kind": "set_clipboard", "text": text, "selections": list(selections)})

    def get_clipboard(self, selection: str = "CLIPBOARD") -> str | None:
        """Read the clipboard (None when nobody owns it)."""
        return self.act({"kind": "get_clipboard", "selection": selection})


class LocalHandle(PolicyHandle):
    """A handle on a pool of desktops in this process (`interface.Desktops`)."""

    def __init__(self, pool: Desktops, env: str) -> None:
        self.pool = pool
        self.env = env
        self.generation = pool.generation(env)

    def act(self, action: dict[str, Any] | Action) -> str | None:
        parsed = action if isinstance(action, Action) else parse_action(action)
        return self.pool.act(self.env, self.generation, parsed).value

    def observe(self, kind: type[Observation]) -> Wire:
        return self.pool.observe(self.env, self.generation, kind).to_json()

    def reset(self) -> int:
        self.generation = self.pool.policy_reset(self.env, self.generation)
        return self.generation

    def refresh(self) -> int:
        self.generation = self.pool.generation(self.env)
        return self.generation
