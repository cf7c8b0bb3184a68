"""The X clipboard of one display: owning CLIPBOARD and PRIMARY, and reading them.

An X selection has no stored value: its owner answers each request. Setting the
clipboard therefore means owning the selection from a small serving thread with its own
connection; reading means asking whoever owns it and waiting for the answer.
"""

from __future__ import annotations

import contextlib
import select
import threading
import time
from collections.abc import Iterator
from typing import Any

from Xlib import X, Xatom
from Xlib import display as xdisplay
from Xlib.error import ConnectionClosedError, DisplayError, XError
from Xlib.protocol import event as xevent
from Xlib.protocol import request

from cleanroom.core.capped import CappedBuffer
from cleanroom.environments.errors import BadAction, PoolError
from cleanroom.environments.interface import SELECTIONS, ClipboardRead
from cleanroom.environments.x11.deadline import (
    X_REQUEST_DEADLINE_S,
    Deadline,
    DisplayUnanswered,
    bounded,
    deadline,
    shut_by,
)

# What python-xlib raises when the display went away or refused us.
_GONE = (XError, OSError, ConnectionError, ConnectionClosedError, DisplayError)

MAX_TEXT_BYTES = 64 * 1024
_READ_TIMEOUT_S = 1.0
# The most of one selection the harness reads: past it the read stops and says
# `truncated` (a program may offer any size; 96 MiB once cost 48 s and 422 MiB a read).
SELECTION_MAX_BYTES = 4 * 1024 * 1024
# The whole read, from opening the display to the last byte: past it the server is
# taken for not answering (a client holds a server grab) and the read is lost.
SELECTION_DEADLINE_S = 5.0
# An incremental transfer whose owner sends no next chunk for this long ends there.
_INCR_CHUNK_WAIT_S = 1.0


class ClipboardUnreadable(PoolError):
    """The selection's owner did not answer in time, or the display is gone."""


class OwnerSilent(ClipboardUnreadable):
    """The selection has an owner, and it did not answer in time: ``owner`` is the id of
    the window it owns the selection with, so a caller can tell its own owner from a
    program's."""

    def __init__(self, message: str, owner: int) -> None:
        super().__init__(message)
        self.owner = owner


class DisplayUnread(ClipboardUnreadable):
    """The display's server did not answer the read in time (a client of the display
    holds a server grab, or the server hangs); ``cause`` says how long it was given."""

    def __init__(self, display_name: str, selection: str, cause: DisplayUnanswered) -> None:
        super().__init__(f"reading {selection}: {cause}")
        self.display_name = display_name
        self.selection = selection
        self.cause = cause

    @property
    def held(self) -> bool:
        """Whether a client of the display held the server (a grab) while we waited."""
        return self.cause.held


class ClipboardOwner:
    """Owns this display's selections on request and serves them until told otherwise."""

    def __init__(self, display_name: str) -> None:
        self.display_name = display_name
        self._x = xdisplay.Display(display_name)
        self._lock = threading.Lock()
        self._win = self._x.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        self._texts: dict[int, bytes] = {}
        self._atoms = {n: self._x.intern_atom(n) for n in (*SELECTIONS, "TARGETS", "UTF8_STRING")}
        self._atoms["TEXT"] = self._x.intern_atom("TEXT")
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, name=f"clipboard{display_name}", daemon=True
        )
        self._thread.start()

    @property
    def window_id(self) -> int:
        """The window that owns the selections this object sets."""
        return int(self._win.id)

    def set(self, text: str, selections: tuple[str, ...] = ("CLIPBOARD",)) -> None:
        """Own the named selections and serve ``text`` from them."""
        data = text.encode("utf-8")
        if len(data) > MAX_TEXT_BYTES:
            raise BadAction(f"clipboard text is {len(data)} bytes; the limit is {MAX_TEXT_BYTES}")
        with self._locked("setting the clipboard"), bounded(self._x, "setting the clipboard"):
            for name in selections:
                atom = self._selection_atom(name)
                self._texts[atom] = data
                self._win.set_selection_owner(atom, X.CurrentTime)
            self._x.sync()

    def clear(self) -> None:
        """Leave every selection without an owner, whoever held it."""
        with self._locked("clearing the clipboard"), bounded(self._x, "clearing the clipboard"):
            self._texts.clear()
            for name in SELECTIONS:
                request.SetSelectionOwner(
                    display=self._x.display,
                    window=X.NONE,
                    selection=self._atoms[name],
                    time=X.CurrentTime,
                )
            self._x.sync()

    @contextlib.contextmanager
    def _locked(self, doing: str) -> Iterator[None]:
        # The serving thread holds the lock while it handles an event; one stuck on the
        # server (a grab) must not hold up a reset for ever either.
        if not self._lock.acquire(timeout=X_REQUEST_DEADLINE_S):
            raise DisplayUnanswered(self.display_name, X_REQUEST_DEADLINE_S, doing, None)
        try:
            yield
        finally:
            self._lock.release()

    def _selection_atom(self, name: str) -> int:
        if name not in SELECTIONS:
            raise BadAction(f"unknown selection {name!r}; use one of {', '.join(SELECTIONS)}")
        return self._atoms[name]

    def _serve(self) -> None:
        fd = self._x.fileno()
        while not self._stop.is_set():
            try:
                # Events can already sit in python-xlib's queue (read while `set` or
                # `clear` waited for a reply), where select() does not see them.
                with self._lock:
                    while self._x.pending_events():
                        self._handle(self._x.next_event())
                select.select([fd], [], [], 0.05)
            except (*_GONE, ValueError, DisplayUnanswered):
                # The display went away, or stopped answering and our connection was shut:
                # the environment's watchdog sees either.
                return

    def _handle(self, ev: Any) -> None:
        if ev.type == X.SelectionClear:
            # A notice can be older than our latest `set` of the same selection (our own
            # `clear`, or a program that took it before we took it back): only a
            # selection that another window owns now is really lost.
            with bounded(self._x, "checking a selection's owner"):
                owner = self._x.get_selection_owner(ev.atom)
            if owner != self._win:
                self._texts.pop(ev.atom, None)
        elif ev.type == X.SelectionRequest:
            self._answer(ev)

    def _answer(self, ev: Any) -> None:
        data = self._texts.get(ev.selection)
        prop = ev.property or ev.target
        a = self._atoms
        if data is None:
            prop = X.NONE
        elif ev.target == a["TARGETS"]:
            targets = [a["TARGETS"], a["UTF8_STRING"], Xatom.STRING, a["TEXT"]]
            ev.requestor.change_property(prop, Xatom.ATOM, 32, targets)
        elif ev.target in (a["UTF8_STRING"], Xatom.STRING, a["TEXT"]):
            kind = a["UTF8_STRING"] if ev.target != Xatom.STRING else Xatom.STRING
            ev.requestor.change_property(prop, kind, 8, data)
        else:
            prop = X.NONE
        reply = xevent.SelectionNotify(
            time=ev.time,
            requestor=ev.requestor,
            selection=ev.selection,
            target=ev.target,
            property=prop,
        )
        ev.requestor.send_event(reply)
        self._x.flush()

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
        """Stop serving and close the connection (selections we owned lose their owner)."""
        self._stop.set()
        self._thread.join(timeout=2)
        try:
            with self._lock:
                self._x.close()
        except _GONE:
            pass


def read_selection(
    display_name: str,
    selection: str = "CLIPBOARD",
    timeout_s: float = _READ_TIMEOUT_S,
    *,
    max_bytes: int = SELECTION_MAX_BYTES,
    deadline_s: float = SELECTION_DEADLINE_S,
) -> ClipboardRead:
    """Ask the selection's owner for its text as UTF-8; None when it has no owner.

    Reads at most ``max_bytes`` (an incremental transfer included) and marks the read
    ``truncated`` past them. Raises `OwnerSilent` (a `ClipboardUnreadable`) when the owner
    does not answer within ``timeout_s``; `DisplayUnread` (a `ClipboardUnreadable`) when
    the server itself does not answer within ``deadline_s`` (a client holds a server
    grab); `ClipboardUnreadable` when the display cannot be read.
    """
    if selection not in SELECTIONS:
        raise BadAction(f"unknown selection {selection!r}; use one of {', '.join(SELECTIONS)}")
    with deadline(deadline_s) as limit:
        try:
            return _read(display_name, selection, timeout_s, max_bytes, limit)
        except _GONE as exc:
            if limit.expired:
                cause = DisplayUnanswered(display_name, deadline_s, "a read", limit.stalled)
                raise DisplayUnread(display_name, selection, cause) from exc
            raise ClipboardUnreadable(f"reading {selection} on {display_name}: {exc}") from exc


def _read(
    display_name: str, selection: str, timeout_s: float, max_bytes: int, limit: Deadline
) -> ClipboardRead:
    x = xdisplay.Display(display_name)
    try:
        sel = x.intern_atom(selection)
        owner = x.get_selection_owner(sel)
        if owner == X.NONE:
            return ClipboardRead(selection, None)
        win = x.screen().root.create_window(
            0, 0, 1, 1, 0, X.CopyFromParent, event_mask=X.PropertyChangeMask
        )
        prop = x.intern_atom("CLEANROOM_READ")
        win.convert_selection(sel, x.intern_atom("UTF8_STRING"), prop, X.CurrentTime)
        x.flush()
        answered = time.monotonic() + timeout_s
        while time.monotonic() < answered:
            while x.pending_events():
                ev = x.next_event()
                if ev.type == X.SelectionNotify and ev.selection == sel:
                    if ev.property == X.NONE:
                        return ClipboardRead(selection, None)
                    got = _property(x, win, prop, max_bytes, limit)
                    raw = got.value()
                    return ClipboardRead(selection, raw.decode("utf-8", "replace"), got.truncated)
            select.select([x.fileno()], [], [], 0.02)
        owner_id = int(getattr(owner, "id", owner))
        raise OwnerSilent(f"{selection} owner on {display_name} did not answer", owner_id)
    finally:
        # Closing the connection destroys the reading window: an owner still sending an
        # incremental transfer to it gets an error and stops.
        with contextlib.suppress(*_GONE):
            x.close()


def _property(x: Any, win: Any, prop: int, max_bytes: int, limit: Deadline) -> CappedBuffer:
    """The answer the owner left in ``prop`` of ``win``: at most ``max_bytes`` of it, read
    straight or as an incremental (INCR) transfer."""
    kept = CappedBuffer(max_bytes)
    # Ask for one unit more than the cap: bytes_after then says whether there was more.
    got = win.get_property(prop, X.AnyPropertyType, 0, max_bytes // 4 + 1, True)
    if got is None:
        return kept
    if got.property_type != x.intern_atom("INCR"):
        kept.add(_bytes(got.value))
        kept.mark_dropped(int(got.bytes_after))
        return kept
    # INCR: the owner sends chunks, each after we delete the last (get_property above
    # deleted the announcement); a zero-length chunk ends the transfer.
    while not kept.full:
        ev = _next_new_value(x, win, prop, limit)
        if ev is None:
            kept.mark_dropped(1)  # the owner stopped sending: what we hold is a part
            return kept
        chunk = win.get_property(prop, X.AnyPropertyType, 0, max_bytes // 4 + 1, True)
        data = _bytes(chunk.value) if chunk is not None else b""
        if not data:
            return kept
        kept.add(data)
        if chunk is not None:
            kept.mark_dropped(int(chunk.bytes_after))
    kept.mark_dropped(1)  # stopped at the cap, with the transfer still going
    return kept


def _next_new_value(x: Any, win: Any, prop: int, limit: Deadline) -> Any:
    """The next PropertyNotify that puts a new chunk in ``prop``, or None when the owner
    sends nothing for `_INCR_CHUNK_WAIT_S`."""
    until = time.monotonic() + _INCR_CHUNK_WAIT_S
    while time.monotonic() < until and not limit.expired:
        while x.pending_events():
            ev = x.next_event()
            if (
                ev.type == X.PropertyNotify
                and ev.window.id == win.id
                and ev.atom == prop
                and ev.state == X.PropertyNewValue
            ):
                return ev
        select.select([x.fileno()], [], [], 0.02)
    return None


def _bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "replace")
    return bytes(value)  # format 16 or 32: an array of numbers, not text
