"""Deadlines on the harness's X requests.

python-xlib waits for a reply with no timeout, and a client of the display can make the
server stop answering everyone else (``GrabServer``): the harness's read would then never
return, at every reset and at the window's close, for every environment. A `Deadline`
shuts the connection's socket when its time is up, which wakes the waiting request with
the connection closed; the caller then knows the server did not answer in time.

The connection is watched from the moment its socket exists, so opening the display (its
setup waits for the server too, and a grabbed server does not answer it) is bounded as well.
"""

from __future__ import annotations

import contextlib
import fcntl
import socket
import struct
import termios
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from Xlib import display as xdisplay
from Xlib.error import ConnectionClosedError, DisplayError
from Xlib.support import connect as _xconnect

from cleanroom.environments.errors import PoolError

# How long one read of a display (open, ask, wait, read the answer) may take in all.
X_REQUEST_DEADLINE_S = 3.0
# How long a probe of a server that did not answer waits for its round trip: a server
# that answers nobody leaves it unread all that time, one that answers does so at once.
PROBE_DEADLINE_S = 1.0

_local = threading.local()
_original_get_socket = _xconnect.get_socket


def _watched_get_socket(
    dname: str, protocol: str | None, host: str | None, dno: int
) -> socket.socket:
    # python-xlib looks this name up in its own module at each connect, so every socket
    # opened while a Deadline is active on this thread is handed to that deadline.
    sock = _original_get_socket(dname, protocol, host, dno)
    deadline: Deadline | None = getattr(_local, "deadline", None)
    if deadline is not None:
        deadline.watch(sock)
    return sock


_xconnect.get_socket = _watched_get_socket


@dataclass(frozen=True)
class StalledServer:
    """What a server that did not answer looked like when the time ran out: its pid (from
    the connection's peer credentials), its process state letter from ``/proc``, and how
    many of our bytes it had left unread in the connection."""

    pid: int | None
    state: str | None
    unread: int | None

    @property
    def held(self) -> bool:
        """Whether the server was idle with our request unread: it chose not to listen to
        us, which is what a server grab by another client does (a busy, stopped or dead
        server is not idle; one that read our request answers it)."""
        return self.state == "S" and (self.unread or 0) > 0


class DisplayUnanswered(PoolError):
    """The display's server did not answer the harness in time (a client holds a server
    grab, or the server hangs): this read is lost, the display and every other one are not.
    ``server`` is what the server looked like then (None when no connection was made)."""

    def __init__(
        self, display_name: str, seconds: float, doing: str, server: StalledServer | None
    ) -> None:
        self.display_name = display_name
        self.seconds = seconds
        self.doing = doing
        self.server = server
        held = " (it held our request unread while idle: a server grab)" if self.held else ""
        super().__init__(f"{display_name} did not answer {doing} within {seconds:g} s{held}")

    @property
    def held(self) -> bool:
        """Whether a client of the display held the server (see `StalledServer.held`)."""
        return self.server is not None and self.server.held


class Deadline:
    """Closes every X connection opened under it (and any handed to `watch`) once
    ``seconds`` have passed; `expired` says whether it did."""

    def __init__(self, seconds: float, *, connects: bool = True) -> None:
        self.seconds = seconds
        self._connects = connects
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._expired = False
        self.stalled: StalledServer | None = None
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    @property
    def expired(self) -> bool:
        """Whether the time ran out (and the watched connections were shut)."""
        return self._expired

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` when the time runs out (at once when it already has)."""
        with self._lock:
            self._sockets.append(sock)
            if self._expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self._expired = True
            if self._sockets:
                self.stalled = stalled_server(self._sockets[-1])
            for sock in self._sockets:
                _shut(sock)

    def __enter__(self) -> Deadline:
        if self._connects:
            if getattr(_local, "deadline", None) is not None:
                raise RuntimeError("a Deadline over new connections is already active here")
            _local.deadline = self
        self._timer.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._timer.cancel()
        if self._connects:
            _local.deadline = None


def stalled_server(sock: socket.socket) -> StalledServer:
    """The server at the other end of ``sock`` as it is now (each part None when it
    cannot be told)."""
    pid: int | None = None
    state: str | None = None
    unread: int | None = None
    with contextlib.suppress(OSError, struct.error):
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid = struct.unpack("3i", creds)[0] or None
    with contextlib.suppress(OSError, IndexError, ValueError):
        # The kernel counts our bytes still queued at the peer (not yet read by it).
        unread = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]
    if pid is not None:
        with contextlib.suppress(OSError, IndexError):
            # After the ")" that ends the command name, the first field is the state.
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return StalledServer(pid, state, unread)


def _shut(sock: socket.socket) -> None:
    # shutdown, not close: the waiting thread still holds the descriptor; shutting it
    # makes its select() return and its recv() read end-of-file.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


# What python-xlib raises on a connection shut under it.
_GONE = (ConnectionClosedError, OSError, ConnectionError)


# The deadline that shut each long-lived connection (a python-xlib Display), so that a
# connection found closed can be told from one its server or another client closed.
_shut_by: weakref.WeakKeyDictionary[Any, DisplayUnanswered] = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def bounded(x: Any, doing: str, seconds: float = X_REQUEST_DEADLINE_S) -> Iterator[Deadline]:
    """Run requests on the open connection ``x`` (a python-xlib Display) with a deadline.

    Past it the connection is shut (its owner sees it `closed`, `shut_by` says why, and
    the environment's damage check names it) and `DisplayUnanswered` is raised instead of
    waiting for ever.
    """
    with Deadline(seconds, connects=False) as limit:
        limit.watch(x.display.socket)
        try:
            yield limit
        except _GONE as exc:
            if not limit.expired:
                raise
            name = str(x.get_display_name())
            unanswered = DisplayUnanswered(name, seconds, doing, limit.stalled)
            _shut_by[x] = unanswered
            raise unanswered from exc


def shut_by(x: Any) -> DisplayUnanswered | None:
    """The deadline that shut the connection ``x`` (None: no deadline of `bounded` did)."""
    return _shut_by.get(x)


def probe_server(display_name: str, seconds: float = PROBE_DEADLINE_S) -> StalledServer | None:
    """The display's server as it is when a round trip on a fresh connection goes
    unanswered for ``seconds``; None when it answers, or when it cannot be reached at all
    (a display that refuses or is gone holds nobody's request).

    For reads whose own connection cannot be looked at (a screenshot's, a tree's): a
    server that holds a fresh connection's request unread while idle is held by a grab."""
    with deadline(seconds) as limit:
        try:
            x = xdisplay.Display(display_name)
            try:
                x.sync()
            finally:
                with contextlib.suppress(*_GONE, DisplayError):
                    x.close()
        except (*_GONE, DisplayError):
            return limit.stalled if limit.expired else None
    return None


@contextlib.contextmanager
def deadline(seconds: float = X_REQUEST_DEADLINE_S) -> Iterator[Deadline]:
    """A `Deadline` over the X connections this thread opens inside the block."""
    with Deadline(seconds) as d:
        yield d
