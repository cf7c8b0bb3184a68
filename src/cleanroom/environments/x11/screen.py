"""What a display shows: screenshots (mss, PNG) and the list of top-level windows."""

from __future__ import annotations

import contextlib
import io
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import mss
from PIL import Image
from Xlib import X
from Xlib import display as xdisplay
from Xlib.error import ConnectionClosedError, XError

from cleanroom.environments.interface import WindowInfo
from cleanroom.environments.x11.deadline import DisplayUnanswered, bounded, shut_by

# The longest a screenshot may wait for the display's server.
SCREENSHOT_DEADLINE_S = 5.0


class Screen:
    """Screenshots and window list for one display; thread-safe."""

    def __init__(self, display_name: str) -> None:
        self.display_name = display_name
        self._lock = threading.Lock()
        self._x = xdisplay.Display(display_name)
        self._grabber: Any = None
        # Screenshots go through mss's own connection, which a deadline cannot shut from
        # here: each runs on a daemon thread of its own (one at a time) and is waited for
        # with a deadline instead; a stuck one never holds up the process's exit.
        self._pending: Future[tuple[int, int, bytes]] | None = None

    def grab_rgb(self, deadline_s: float = SCREENSHOT_DEADLINE_S) -> tuple[int, int, bytes]:
        """The whole screen as raw RGB: (width, height, bytes).

        Raises `DisplayUnanswered` when the server does not answer within ``deadline_s``,
        and at once while that screenshot still waits (a grab holds the server)."""
        with self._lock:
            if self._pending is not None and not self._pending.done():
                raise DisplayUnanswered(
                    self.display_name, 0, "a screenshot (one still waits)", None
                )
            shot = self._pending = Future()
            threading.Thread(target=self._grab_into, args=(shot,), daemon=True).start()
        try:
            return shot.result(timeout=deadline_s)
        except FutureTimeout:
            raise DisplayUnanswered(self.display_name, deadline_s, "a screenshot", None) from None

    def _grab_into(self, shot: Future[tuple[int, int, bytes]]) -> None:
        try:
            shot.set_result(self._grab())
        except BaseException as exc:  # handed to the caller waiting on the future
            shot.set_exception(exc)

    def _grab(self) -> tuple[int, int, bytes]:
        if self._grabber is None:
            self._grabber = mss.MSS(display=self.display_name)
        shot = self._grabber.grab(self._grabber.monitors[0])
        return shot.width, shot.height, shot.rgb

    def screenshot_png(self) -> bytes:
        """The whole screen as a PNG (fast compression: latency matters more than size)."""
        width, height, rgb = self.grab_rgb()
        buf = io.BytesIO()
        Image.frombytes("RGB", (width, height), rgb).save(buf, "PNG", compress_level=1)
        return buf.getvalue()

    def windows(self) -> list[WindowInfo]:
        """Mapped top-level windows with a title, bottom to top (the server's stacking order)."""
        with self._lock, bounded(self._x, "listing windows"):
            out = []
            for w in self._x.screen().root.query_tree().children:
                try:
                    attrs = w.get_attributes()
                    if attrs.map_state != X.IsViewable:
                        continue
                    title = _title(self._x, w)
                    if not title:
                        continue
                    cls = w.get_wm_class()
                    g = w.get_geometry()
                except XError:
                    continue  # the window went away while we looked
                out.append(
                    WindowInfo(w.id, title, cls[1] if cls else "", g.x, g.y, g.width, g.height)
                )
            return out

    def delete_root_property(self, name: str) -> None:
        """Remove a property of the root window (nothing happens when it is not set)."""
        with self._lock, bounded(self._x, "deleting a root property"):
            self._x.screen().root.delete_property(self._x.intern_atom(name))
            self._x.sync()

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
        """Close the X connections (a screenshot still waiting keeps mss's until its
        display ends: closing it under the waiting call is not safe)."""
        with self._lock:
            waiting = self._pending is not None and not self._pending.done()
            if self._grabber is not None and not waiting:
                self._grabber.close()
                self._grabber = None
            with contextlib.suppress(OSError, ConnectionClosedError):
                self._x.close()  # a connection the server (or a deadline) shut raises here


def client_pid(x: xdisplay.Display, window_id: int) -> int | None:
    """The host pid of the client that made a window, as the X server knows it (X-Resource).

    Not the window's ``_NET_WM_PID``: a program in a sandbox or a container writes its pid
    as its own namespace numbers it, and any client may write any number there.
    """
    from Xlib.ext import res

    try:
        reply = x.res_query_client_ids([{"client": window_id, "mask": res.LocalClientPIDMask}])
    except (XError, AttributeError):
        return None
    for client in reply.ids:
        if client.spec.mask == res.LocalClientPIDMask and client.value:
            return int(client.value[0])
    return None


def _title(x: xdisplay.Display, w: Any) -> str:
    net = w.get_full_property(x.intern_atom("_NET_WM_NAME"), x.intern_atom("UTF8_STRING"))
    if net is not None and net.value:
        value = net.value
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    name = w.get_wm_name()
    if isinstance(name, bytes):
        return name.decode("latin-1")
    return name or ""
