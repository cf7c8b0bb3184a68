"""Synthetic input through XTest on one display: typing, keys, hotkeys, pointer, focus.

Events go to the X server as if from a real keyboard and mouse, so they reach whatever
window has the input focus on this display and nothing on any other display. Keys this
object pressed are tracked so `release_all` can lift them: a modifier left down leaks
into later typing on the same display.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from Xlib import X
from Xlib import display as xdisplay
from Xlib.error import ConnectionClosedError, XError
from Xlib.ext import xtest

from cleanroom.environments.errors import BadAction
from cleanroom.environments.x11.deadline import DisplayUnanswered, bounded, shut_by
from cleanroom.environments.x11.keys import keysym_for_char, keysym_for_name, parse_hotkey

_SHIFT = 0xFFE1  # Shift_L
_FOCUS_TRIES = 5


class XInput:
    """XTest input for one display; thread-safe."""

    def __init__(self, display_name: str) -> None:
        self.display_name = display_name
        self._x = xdisplay.Display(display_name)
        self._lock = threading.RLock()
        self._held: set[int] = set()
        self._spare: list[int] = []
        self._bound: dict[int, int] = {}  # keysym -> spare keycode we bound it to
        self._load_spares()

    def _load_spares(self) -> None:
        first = self._x.display.info.min_keycode
        count = self._x.display.info.max_keycode - first + 1
        mapping = self._x.get_keyboard_mapping(first, count)
        self._spare = [first + i for i, syms in enumerate(mapping) if not any(syms)]

    def _keycode(self, keysym: int) -> tuple[int, bool]:
        """The keycode for a keysym and whether Shift is needed, binding a spare if needed."""
        for code, index in self._x.keysym_to_keycodes(keysym):
            if index == 0:
                return code, False
        for code, index in self._x.keysym_to_keycodes(keysym):
            if index == 1:
                return code, True
        code = self._bound.get(keysym)
        if code is not None:
            return code, False
        if not self._spare:
            raise BadAction(f"no free keycode to type keysym {keysym:#x}")
        code = self._spare.pop()
        self._x.change_keyboard_mapping(code, [(keysym, keysym)])
        self._x.sync()
        self._bound[keysym] = code
        return code, False

    def _press(self, code: int) -> None:
        xtest.fake_input(self._x, X.KeyPress, code)
        self._held.add(code)

    def _release(self, code: int) -> None:
        xtest.fake_input(self._x, X.KeyRelease, code)
        self._held.discard(code)

    def type_text(self, text: str, *, delay_s: float = 0.003) -> None:
        """Type ``text`` one character at a time, pressing Shift where a character needs it."""
        with self._lock, bounded(self._x, "input"):  # binding a spare keycode asks the server
            codes = [self._keycode(keysym_for_char(ch)) for ch in text]  # validate first
            shift = self._keycode(_SHIFT)[0]
        for code, needs_shift in codes:
            with self._lock, bounded(self._x, "input"):
                if needs_shift:
                    self._press(shift)
                self._press(code)
                self._release(code)
                if needs_shift:
                    self._release(shift)
                self._x.sync()
            if delay_s:
                time.sleep(delay_s)

    def key_down(self, name: str) -> None:
        """Press and hold a key (until `key_up` or `release_all`)."""
        with self._lock, bounded(self._x, "input"):
            self._press(self._keycode(keysym_for_name(name))[0])
            self._x.sync()

    def key_up(self, name: str) -> None:
        """Release a key."""
        with self._lock, bounded(self._x, "input"):
            self._release(self._keycode(keysym_for_name(name))[0])
            self._x.sync()

    def hotkey(self, combo: str) -> None:
        """Press the keys of ``ctrl+s`` in order, then release them in reverse."""
        with self._lock, bounded(self._x, "input"):
            codes = [self._keycode(k)[0] for k in parse_hotkey(combo)]
            for code in codes:
                self._press(code)
            for code in reversed(codes):
                self._release(code)
            self._x.sync()

    def move(self, x: int, y: int) -> None:
        """Move the pointer to screen coordinates."""
        with self._lock, bounded(self._x, "input"):
            xtest.fake_input(self._x, X.MotionNotify, x=int(x), y=int(y))
            self._x.sync()

    def click(self, x: int, y: int, button: int = 1, count: int = 1) -> None:
        """Move to (x, y) and click ``count`` times with ``button``."""
        if button not in (1, 2, 3, 4, 5) or not 1 <= count <= 3:
            raise BadAction(f"bad click: button {button}, count {count}")
        with self._lock, bounded(self._x, "input"):
            xtest.fake_input(self._x, X.MotionNotify, x=int(x), y=int(y))
            for _ in range(count):
                xtest.fake_input(self._x, X.ButtonPress, button)
                xtest.fake_input(self._x, X.ButtonRelease, button)
            self._x.sync()

    def focus(self, window_id: int, *, verify: bool = True) -> None:
        """Raise a top-level window, give it the input focus and put the pointer over it.

        There is no window manager, so this is what activating a window means here. With
        ``verify``, the focus is set again until it holds; without, it is set once (the
        positive control wants the race that verification would hide).
        """
        with self._lock, bounded(self._x, "input"):
            try:
                win: Any = self._x.create_resource_object("window", window_id)
                geom = win.get_geometry()
                xtest.fake_input(
                    self._x, X.MotionNotify, x=geom.x + geom.width // 2, y=geom.y + geom.height // 2
                )
                # A program that maps a window late (Chromium does) may take the focus
                # back once; set it until it holds.
                for _ in range(_FOCUS_TRIES):
                    win.configure(stack_mode=X.Above)
                    win.set_input_focus(X.RevertToParent, X.CurrentTime)
                    self._x.sync()
                    if not verify:
                        return
                    time.sleep(0.03)
                    if not verify or self._x.get_input_focus().focus.id == window_id:
                        return
                raise BadAction(f"window {window_id:#x} did not keep the input focus")
            except XError as exc:
                raise BadAction(f"no such window {window_id:#x}: {exc}") from exc

    def release_all(self) -> None:
        """Release every key this object holds down, modifiers included."""
        with self._lock, bounded(self._x, "releasing keys"):
            for code in list(self._held):
                self._release(code)
            self._x.sync()

    def held(self) -> list[int]:
        """Keycodes currently held by this object."""
        with self._lock:  # no request: nothing to bound
            return sorted(self._held)

    @property
    def closed(self) -> bool:
        """Whether the server closed this connection (a client of the display may end
        any other's with ``KillClient``)."""
        return self._x.display.socket_error is not None

    @property
    def shut_by(self) -> DisplayUnanswered | None:
        """The deadline that shut this connection, when one did (the server then did not
        answer the harness in time, and ``closed`` is the harness's own doing)."""
        return shut_by(self._x)

    def close(self) -> None:
        """Release held keys and close the connection."""
        # If the display is gone, nothing is held on it any more.
        with contextlib.suppress(XError, OSError, ConnectionError, ConnectionClosedError):
            self.release_all()
        with contextlib.suppress(OSError, ConnectionClosedError):
            self._x.close()  # a connection the server (or a deadline) shut raises here
