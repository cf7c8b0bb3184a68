"""The clipboard owner on a real Xvfb display, including the display dying under it."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from Xlib import X
from Xlib import display as xdisplay

from cleanroom.environments.x11.clipboard import ClipboardOwner, OwnerSilent, read_selection
from cleanroom.environments.x11.display import XvfbDisplay


@pytest.fixture
def display(tmp_path: Path) -> Iterator[XvfbDisplay]:
    if shutil.which("Xvfb") is None:
        pytest.fail("Xvfb is missing; run scripts/setup.sh")
    d = XvfbDisplay.start(tmp_path / "Xauthority")
    try:
        yield d
    finally:
        d.stop()


def test_text_set_is_read_back_by_another_client(display: XvfbDisplay) -> None:
    owner = ClipboardOwner(display.name)
    try:
        owner.set("tagged env01-w001-r0001-0a1b2c3d", ("CLIPBOARD", "PRIMARY"))
        assert read_selection(display.name, "CLIPBOARD").text == "tagged env01-w001-r0001-0a1b2c3d"
        assert read_selection(display.name, "PRIMARY").text == "tagged env01-w001-r0001-0a1b2c3d"
    finally:
        owner.close()


def test_a_display_that_dies_ends_the_owner_thread_quietly(display: XvfbDisplay) -> None:
    failures: list[threading.ExceptHookArgs] = []
    previous = threading.excepthook
    threading.excepthook = failures.append
    try:
        owner = ClipboardOwner(display.name)
        owner.set("about to lose its display")
        display.stop()
        owner._thread.join(timeout=5)
        assert not owner._thread.is_alive()
        owner.close()
    finally:
        threading.excepthook = previous
    assert failures == [], [f"{f.exc_type.__name__}: {f.exc_value}" for f in failures]


def test_text_set_right_after_a_clear_is_served(display: XvfbDisplay) -> None:
    # A reset clears the selections; the owner's own clear notices reach it late, and
    # must not wipe what it was asked to serve since.
    owner = ClipboardOwner(display.name)
    try:
        for i in range(3):
            owner.set(f"first {i}", ("CLIPBOARD", "PRIMARY"))
            assert read_selection(display.name, "CLIPBOARD").text == f"first {i}"
            owner.clear()
            time.sleep(0.5)
            owner.set(f"second {i}", ("CLIPBOARD", "PRIMARY"))
            assert read_selection(display.name, "CLIPBOARD").text == f"second {i}"
            assert read_selection(display.name, "PRIMARY").text == f"second {i}"
    finally:
        owner.close()


def test_an_owner_that_never_answers_is_named_by_its_window(display: XvfbDisplay) -> None:
    # A program takes CLIPBOARD and never answers a SelectionRequest; the harness's own
    # owner holds PRIMARY and stops serving. Each silence names the window that owns it,
    # so the pool can tell a program's (the environment's own act) from its own.
    mute = xdisplay.Display(display.name)
    harness = ClipboardOwner(display.name)
    try:
        window = mute.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        window.set_selection_owner(mute.intern_atom("CLIPBOARD"), X.CurrentTime)
        mute.sync()
        with pytest.raises(OwnerSilent) as by_program:
            read_selection(display.name, "CLIPBOARD", timeout_s=0.3)
        assert by_program.value.owner == window.id != harness.window_id
        harness.set("served, then not", ("PRIMARY",))
        harness._stop.set()
        harness._thread.join(timeout=2)
        with pytest.raises(OwnerSilent) as by_harness:
            read_selection(display.name, "PRIMARY", timeout_s=0.3)
        assert by_harness.value.owner == harness.window_id
    finally:
        harness.close()
        mute.close()
