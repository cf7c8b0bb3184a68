"""Reading a selection on a real Xvfb is bounded in time and size whatever its owner or
another client of the display does: a server grab, a huge answer, an endless transfer."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from Xlib import X, Xatom
from Xlib import display as xdisplay
from Xlib.protocol import event as xevent

from cleanroom.environments.x11.clipboard import (
    ClipboardOwner,
    DisplayUnread,
    OwnerSilent,
    read_selection,
)
from cleanroom.environments.x11.deadline import X_REQUEST_DEADLINE_S, DisplayUnanswered
from cleanroom.environments.x11.display import XvfbDisplay
from cleanroom.environments.x11.screen import Screen
from cleanroom.environments.x11.xinput import XInput
from cleanroom.lifecycle import wait_until


@pytest.fixture
def display(tmp_path: Path) -> Iterator[XvfbDisplay]:
    if shutil.which("Xvfb") is None:
        pytest.fail("Xvfb is missing; run scripts/setup.sh")
    d = XvfbDisplay.start(tmp_path / "Xauthority")
    try:
        yield d
    finally:
        d.stop()


class _Owner:
    """A program's selection owner that answers every request with ``answer(x, ev)``."""

    def __init__(self, display_name: str, answer: Any) -> None:
        self.x = xdisplay.Display(display_name)
        self.win = self.x.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        self.win.set_selection_owner(self.x.intern_atom("CLIPBOARD"), X.CurrentTime)
        self.x.sync()
        self.answer = answer
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            while not self.stop.is_set():
                if not self.x.pending_events():
                    time.sleep(0.005)
                    continue
                ev = self.x.next_event()
                if ev.type == X.SelectionRequest:
                    self.answer(self.x, ev)
        except Exception:
            return  # the reader went away mid-transfer: what an owner sees then

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.x.close()


def _notify(x: Any, ev: Any) -> None:
    ev.requestor.send_event(
        xevent.SelectionNotify(
            time=ev.time,
            requestor=ev.requestor,
            selection=ev.selection,
            target=ev.target,
            property=ev.property,
        )
    )
    x.flush()


def test_a_server_grab_makes_the_read_lost_within_its_deadline(display: XvfbDisplay) -> None:
    grabber = xdisplay.Display(display.name)
    harness = ClipboardOwner(display.name)
    try:
        harness.set("served")
        grabber.grab_server()
        grabber.sync()
        started = time.monotonic()
        with pytest.raises(DisplayUnread) as lost:
            read_selection(display.name, "CLIPBOARD", deadline_s=1.0)
        assert time.monotonic() - started < 3.0
        assert lost.value.display_name == display.name
        grabber.ungrab_server()
        grabber.sync()
        assert read_selection(display.name, "CLIPBOARD").text == "served"
    finally:
        harness.close()
        grabber.close()


def test_a_silent_owner_is_still_owner_silent_not_a_lost_display(display: XvfbDisplay) -> None:
    mute = _Owner(display.name, lambda x, ev: None)
    try:
        with pytest.raises(OwnerSilent) as silent:
            read_selection(display.name, "CLIPBOARD", timeout_s=0.3)
        assert silent.value.owner == mute.win.id
    finally:
        mute.close()


def test_an_answer_past_the_cap_is_read_up_to_the_cap_and_marked_truncated(
    display: XvfbDisplay,
) -> None:
    def big(x: Any, ev: Any) -> None:
        ev.requestor.change_property(ev.property, Xatom.STRING, 8, b"a" * 200_000)
        _notify(x, ev)

    owner = _Owner(display.name, big)
    try:
        got = read_selection(display.name, "CLIPBOARD", max_bytes=50_000)
        assert got.truncated
        assert got.text == "a" * 50_000
        whole = read_selection(display.name, "CLIPBOARD", max_bytes=300_000)
        assert not whole.truncated
        assert whole.text == "a" * 200_000
    finally:
        owner.close()


def test_an_endless_incremental_transfer_stops_at_the_cap(display: XvfbDisplay) -> None:
    chunk = b"z" * 65536

    def endless(x: Any, ev: Any) -> None:
        # INCR: announce, then send a chunk each time the reader deletes the last one,
        # for ever.
        incr = x.intern_atom("INCR")
        requestor = x.create_resource_object("window", ev.requestor.id)
        requestor.change_attributes(event_mask=X.PropertyChangeMask)
        requestor.change_property(ev.property, incr, 32, [len(chunk) * 1000])
        _notify(x, ev)
        prop = ev.property
        while True:
            got = x.next_event()
            if got.type == X.PropertyNotify and got.atom == prop and got.state == X.PropertyDelete:
                requestor.change_property(prop, Xatom.STRING, 8, chunk)
                x.flush()

    owner = _Owner(display.name, endless)
    try:
        started = time.monotonic()
        got = read_selection(display.name, "CLIPBOARD", max_bytes=300_000)
        assert time.monotonic() - started < 5.0
        assert got.truncated
        assert got.text is not None
        assert len(got.text) == 300_000
    finally:
        owner.close()


def test_a_grab_on_one_display_leaves_another_display_readable(
    display: XvfbDisplay, tmp_path: Path
) -> None:
    other = XvfbDisplay.start(tmp_path / "other-Xauthority")
    grabber = xdisplay.Display(display.name)
    harness = ClipboardOwner(other.name)
    try:
        harness.set("still here")
        grabber.grab_server()
        grabber.sync()
        with pytest.raises(DisplayUnread):
            read_selection(display.name, "CLIPBOARD", deadline_s=0.5)
        assert read_selection(other.name, "CLIPBOARD").text == "still here"
    finally:
        harness.close()
        grabber.close()
        other.stop()


def test_a_grab_is_told_from_a_server_that_hangs(display: XvfbDisplay) -> None:
    # A grabbed server is idle with our request unread: held by a client. A stopped
    # server is not idle: the read is lost, and nothing says a client did it.
    grabber = xdisplay.Display(display.name)
    try:
        grabber.grab_server()
        grabber.sync()
        with pytest.raises(DisplayUnread) as grabbed:
            read_selection(display.name, "CLIPBOARD", deadline_s=0.5)
        assert grabbed.value.held
        grabber.ungrab_server()
        grabber.sync()
    finally:
        grabber.close()
    server = _server_pid(display)
    os.kill(server, signal.SIGSTOP)
    try:
        with pytest.raises(DisplayUnread) as stopped:
            read_selection(display.name, "CLIPBOARD", deadline_s=0.5)
        assert not stopped.value.held
    finally:
        os.kill(server, signal.SIGCONT)


def _server_pid(display: XvfbDisplay) -> int:
    x = xdisplay.Display(display.name)
    try:
        creds = x.display.socket.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")
        )
        return int(struct.unpack("3i", creds)[0])
    finally:
        x.close()


def test_input_and_window_listing_under_a_grab_end_by_their_deadline(
    display: XvfbDisplay,
) -> None:
    # The harness's long-lived connections: past the deadline the act is lost and the
    # connection is shut, which the environment's damage check then names.
    typing = XInput(display.name)
    screen = Screen(display.name)
    grabber = xdisplay.Display(display.name)
    try:
        grabber.grab_server()
        grabber.sync()
        started = time.monotonic()
        with pytest.raises(DisplayUnanswered) as typed:
            typing.key_down("a")
        with pytest.raises(DisplayUnanswered) as listed:
            screen.windows()
        assert time.monotonic() - started < 2 * X_REQUEST_DEADLINE_S + 2.0
        assert typed.value.held
        assert listed.value.held
        assert typing.closed
        assert screen.closed
    finally:
        grabber.close()
        typing.close()
        screen.close()


def test_a_screenshot_under_a_grab_ends_by_its_deadline_and_works_after_it(
    display: XvfbDisplay,
) -> None:
    screen = Screen(display.name)
    grabber = xdisplay.Display(display.name)
    try:
        width, _, _ = screen.grab_rgb()  # mss's connection is open before the grab
        grabber.grab_server()
        grabber.sync()
        started = time.monotonic()
        with pytest.raises(DisplayUnanswered):
            screen.grab_rgb(deadline_s=0.5)
        with pytest.raises(DisplayUnanswered):  # at once: the last one still waits
            screen.grab_rgb(deadline_s=5.0)
        assert time.monotonic() - started < 2.0
        grabber.ungrab_server()
        grabber.sync()
        assert wait_until(lambda: _shoots(screen), 5.0, 0.1)
        assert screen.grab_rgb()[0] == width
    finally:
        grabber.close()
        screen.close()


def _shoots(screen: Screen) -> bool:
    try:
        screen.grab_rgb()
    except DisplayUnanswered:
        return False
    return True


def test_clearing_the_clipboard_under_a_grab_ends_by_its_deadline(display: XvfbDisplay) -> None:
    # A reset clears the harness's own selections: under a grab it must end, not wait.
    owner = ClipboardOwner(display.name)
    grabber = xdisplay.Display(display.name)
    try:
        owner.set("before the grab")
        grabber.grab_server()
        grabber.sync()
        started = time.monotonic()
        with pytest.raises(DisplayUnanswered) as cleared:
            owner.clear()
        assert time.monotonic() - started < X_REQUEST_DEADLINE_S + 2.0
        assert cleared.value.held
        assert owner.closed  # the damage check names the harness's clipboard connection
    finally:
        grabber.close()
        owner.close()
