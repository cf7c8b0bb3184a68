"""OSWorld's ``activate_window``, ``close_window`` and ``open`` setup steps on a real pool
environment running Writer and a terminal, through its `DesktopGuest`: as its user, in
its sandbox, on its display.

The pool's desktops run no window manager, so activating means raising the window and
giving it the input focus, and closing means ``WM_DELETE_WINDOW``; ``open`` hands the
file to ``xdg-open``, which opens a text file in LibreOffice Writer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cleanroom.environments.interface import WindowInfo
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.guests.desktop import DesktopGuest
from cleanroom.verifiers.osworld.guest_program import SYSTEM_PYTHON
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.setup_steps import (
    SetupStepFailed,
    StepContext,
    run_steps,
)
from cleanroom.verifiers.osworld.task import SetupStep
from cleanroom.verifiers.osworld.task_cache import TaskCache

pytestmark = [pytest.mark.slow, pytest.mark.beside_desktops]

ENV = "env01"
_FOCUS = "from Xlib import display; print(display.Display().get_input_focus().focus.id)"


@pytest.fixture(scope="module")
def pool(desktop_stack: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    p = Pool(PoolConfig(envs=1, programs=("writer", "terminal")), tmp_path_factory.mktemp("run"))
    p.start()
    try:
        yield p
    finally:
        p.stop()


@pytest.fixture
def guest(pool: Pool) -> Iterator[DesktopGuest]:
    g = DesktopGuest(ENV, pool.env(ENV).describe())
    try:
        yield g
    finally:
        g.close()  # ends what the steps started


def steps(guest: DesktopGuest, *todo: SetupStep) -> list[dict[str, Any]]:
    cache = TaskCache(None, "desktop-steps")
    cache.reset()
    try:
        return run_steps(tuple(todo), "config", StepContext(guest, CheckSettings(), cache))
    finally:
        cache.discard()


def windows(pool: Pool) -> list[WindowInfo]:
    """Mapped top-level windows with a title, bottom to top."""
    return list(pool.env(ENV).windows())


def window(pool: Pool, title_part: str) -> WindowInfo:
    [w] = [w for w in windows(pool) if title_part in w.title]
    return w


def focused(guest: DesktopGuest) -> int:
    result = guest.exec([SYSTEM_PYTHON, "-c", _FOCUS], shell=False, timeout=30)
    assert result.exit_code == 0, result.stderr
    return int(result.stdout)


def test_the_pool_desktop_has_no_ewmh_window_manager(guest: DesktopGuest) -> None:
    """What the steps are built for: ``wmctrl`` has nothing to talk to here."""
    result = guest.exec(
        ["xprop", "-root", "_NET_SUPPORTING_WM_CHECK", "_NET_CLIENT_LIST"], shell=False, timeout=30
    )
    # A set property prints as ``NAME(WINDOW): window id # 0x...``.
    assert result.exit_code == 0 and "(WINDOW)" not in result.stdout.decode()


def test_activate_window_raises_the_window_and_gives_it_the_focus(
    pool: Pool, guest: DesktopGuest
) -> None:
    writer = window(pool, "LibreOffice Writer")
    terminal = window(pool, "terminal")

    [to_writer] = steps(guest, SetupStep("activate_window", {"window_name": "libreoffice writer"}))
    assert to_writer["matched"] and int(to_writer["window"], 16) == writer.id
    assert to_writer["window_manager"] is False and to_writer["focused"] is True
    assert focused(guest) == writer.id and windows(pool)[-1].id == writer.id

    [to_terminal] = steps(
        guest,
        SetupStep(
            "activate_window", {"window_name": "xterm.XTerm", "by_class": True, "strict": True}
        ),
    )
    assert to_terminal["matched"] and int(to_terminal["window"], 16) == terminal.id
    assert focused(guest) == terminal.id and windows(pool)[-1].id == terminal.id


def test_activate_window_without_a_match_changes_nothing_and_goes_on(
    pool: Pool, guest: DesktopGuest
) -> None:
    before = (focused(guest), [w.id for w in windows(pool)])
    records = steps(
        guest,
        SetupStep("activate_window", {"window_name": "Terminal", "strict": True}),
        SetupStep("sleep", {"seconds": 0}),
    )
    assert records[0]["ok"] and records[0]["matched"] is False and records[1]["ok"]
    assert (focused(guest), [w.id for w in windows(pool)]) == before


def test_open_shows_the_file_in_its_window_and_close_window_closes_it(
    pool: Pool, guest: DesktopGuest
) -> None:
    guest.write_file("~/Desktop/shopping list.txt", b"milk\neggs\n")
    [opened] = steps(guest, SetupStep("open", {"path": "~/Desktop/shopping list.txt"}))
    assert opened["opened_with"] == "xdg-open"
    assert opened["path"] == str(Path(guest.home) / "Desktop" / "shopping list.txt")
    assert "shopping list.txt" in opened["title"] and "LibreOffice" in opened["title"]
    doc = window(pool, "shopping list.txt")
    assert int(opened["window"], 16) == doc.id

    # A first start of LibreOffice with the default profile may show a tip on top.
    closed = steps(
        guest,
        SetupStep("close_window", {"window_name": "Tip of the Day"}),
        SetupStep("close_window", {"window_name": "shopping list.txt"}),
    )
    assert closed[1]["matched"] and closed[1]["how"] == "WM_DELETE_WINDOW"
    deadline = time.monotonic() + 60
    while any(w.id == doc.id for w in windows(pool)):
        assert time.monotonic() < deadline, "the document's window did not close"
        time.sleep(0.5)
    assert window(pool, "terminal") and window(pool, "notes.odt")  # the others stay


def test_open_of_a_missing_file_fails_the_setup(guest: DesktopGuest) -> None:
    with pytest.raises(SetupStepFailed, match="no file or program") as failed:
        steps(guest, SetupStep("open", {"path": "~/Desktop/no such file.txt"}))
    assert failed.value.step_type == "open"
