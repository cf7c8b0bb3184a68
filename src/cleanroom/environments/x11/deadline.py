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
import socket
import threading
from collections.abc import Iterator
from types import TracebackType

from Xlib.support import connect as _xconnect

from cleanroom.environments.errors import PoolError

# How long one read of a display (open, ask, wait, read the answer) may take in all.
X_REQUEST_DEADLINE_S = 3.0

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


class DisplayUnanswered(PoolError):
    """The display's server did not answer the harness in time (a client holds a server
    grab, or the server hangs): this read is lost, the display and every other one are not."""

    def __init__(self, display_name: str, seconds: float, doing: str) -> None:
        self.display_name = display_name
        self.seconds = seconds
        self.doing = doing
        super().__init__(f"{display_name} did not answer {doing} within {seconds:g} s")


class Deadline:
    """Closes every X connection opened under it (and any handed to `watch`) once
    ``seconds`` have passed; `expired` says whether it did."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._expired = False
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
            for sock in self._sockets:
                _shut(sock)

    def __enter__(self) -> Deadline:
        if getattr(_local, "deadline", None) is not None:
            raise RuntimeError("a Deadline is already active on this thread")
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
        _local.deadline = None


def _shut(sock: socket.socket) -> None:
    # shutdown, not close: the waiting thread still holds the descriptor; shutting it
    # makes its select() return and its recv() read end-of-file.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def deadline(seconds: float = X_REQUEST_DEADLINE_S) -> Iterator[Deadline]:
    """A `Deadline` over the X connections this thread opens inside the block."""
    with Deadline(seconds) as d:
        yield d
