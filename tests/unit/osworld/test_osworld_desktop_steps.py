"""The ``open``, ``activate_window`` and ``close_window`` setup steps, with a scripted
guest (no display, no processes): which guests run them, the argv they build, and the
failures OSWorld stops on or goes past. The window helper's matching and path rules are
checked on its own functions."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cleanroom.exec_result import ExecResult
from cleanroom.guests.base import Command, CommandNotStarted, Guest
from cleanroom.verifiers.osworld import guest_windows
from cleanroom.verifiers.osworld.guest_program import SYSTEM_PYTHON
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.setup_steps import (
    DESKTOP_STEP_RUNNERS,
    STEP_RUNNERS,
    WINDOWS_HELPER,
    SetupStepFailed,
    StepContext,
    run_steps,
    step_runners,
)
from cleanroom.verifiers.osworld.task import SetupStep
from cleanroom.verifiers.osworld.task_cache import TaskCache

Helper = Callable[[str, dict[str, Any]], Any]


class WindowGuest(Guest):
    """Answers the window helper from ``helper(op, args)``: a dict to print as JSON, or an
    `ExecResult` to return as it is. Records every command and its time limit."""

    kind = "scripted-desktop"
    has_desktop = True

    def __init__(self, helper: Helper | None = None) -> None:
        self.helper = helper or (lambda op, args: {"window": None})
        self.ran: list[tuple[Command, bool, float | None]] = []
        self.spawned: list[tuple[Command, bool]] = []
        self.spawn_error: Exception | None = None

    @property
    def home(self) -> str:
        return "/home/user"

    def exec(
        self, command: Command, *, shell: bool, timeout: float, user: str | None = None
    ) -> ExecResult:
        self.ran.append((command, shell, timeout))
        assert isinstance(command, list) and command[0] == SYSTEM_PYTHON
        answer = self.helper(command[4], json.loads(command[5]))
        if isinstance(answer, ExecResult):
            return answer
        return ExecResult(exit_code=0, stdout=json.dumps(answer).encode())

    def spawn(self, command: Command, *, shell: bool, user: str | None = None) -> None:
        if self.spawn_error is not None:
            raise self.spawn_error
        self.spawned.append((command, shell))

    def read_file(self, path: str) -> bytes:
        raise FileNotFoundError(path)

    def write_file(self, path: str, data: bytes) -> None:
        raise AssertionError("no step here writes files")

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind}

    def fresh(self) -> Guest:
        return WindowGuest(self.helper)


class NoDesktopGuest(WindowGuest):
    kind = "scripted"
    has_desktop = False


@pytest.fixture
def settings(tmp_path: Path) -> CheckSettings:
    return CheckSettings(cache_root=str(tmp_path / "cache"), step_timeout=7)


@pytest.fixture
def cache(settings: CheckSettings) -> Iterator[TaskCache]:
    c = TaskCache(settings.cache_root, "t")
    c.reset()
    yield c
    c.discard()


def run(guest: Guest, settings: CheckSettings, cache: TaskCache, *steps: SetupStep) -> Any:
    return run_steps(tuple(steps), "config", StepContext(guest, settings, cache))


def step(kind: str, **parameters: Any) -> SetupStep:
    return SetupStep(kind, parameters)


# -- which guests run them ---------------------------------------------------------------


@pytest.mark.parametrize(
    "desktop_step",
    [
        step("open", path="~/a.txt"),
        step("activate_window", window_name="Terminal"),
        step("close_window", window_name="Terminal"),
    ],
    ids=lambda s: s.type,
)
def test_a_guest_without_a_desktop_refuses_the_step_and_runs_nothing(
    desktop_step: SetupStep, settings: CheckSettings, cache: TaskCache
) -> None:
    guest = NoDesktopGuest()
    with pytest.raises(SetupStepFailed, match="needs a desktop session") as failed:
        run(guest, settings, cache, desktop_step)
    assert failed.value.step_type == desktop_step.type
    assert guest.ran == [] and guest.spawned == []


def test_only_a_guest_with_a_desktop_gets_the_desktop_runners() -> None:
    assert step_runners(NoDesktopGuest()) == STEP_RUNNERS
    assert step_runners(WindowGuest()) == {**STEP_RUNNERS, **DESKTOP_STEP_RUNNERS}
    assert set(DESKTOP_STEP_RUNNERS) == {
        "open",
        "activate_window",
        "close_window",
        "chrome_open_tabs",
        "chrome_close_tabs",
    }


def test_a_desktop_step_not_implemented_is_not_blamed_on_a_missing_desktop(
    settings: CheckSettings, cache: TaskCache
) -> None:
    with pytest.raises(SetupStepFailed, match="not supported yet") as failed:
        run(WindowGuest(), settings, cache, step("googledrive", operation=[]))
    assert "needs a desktop" not in str(failed.value)


def test_the_desktop_guest_says_it_has_a_desktop_and_the_others_do_not() -> None:
    from cleanroom.guests.desktop import DesktopGuest
    from cleanroom.guests.docker import DockerGuest
    from cleanroom.guests.local import LocalGuest

    assert DesktopGuest.has_desktop
    assert not LocalGuest.has_desktop and not DockerGuest.has_desktop


# -- activate_window and close_window ------------------------------------------------------


def test_activate_window_runs_the_helper_without_a_shell_with_the_name_as_data(
    settings: CheckSettings, cache: TaskCache
) -> None:
    name = "a'; rm -rf ~ #$(x) `y`"
    guest = WindowGuest(lambda op, args: {"window": "0x1", "title": name})
    [record] = run(guest, settings, cache, step("activate_window", window_name=name, strict=True))
    [(argv, shell, timeout)] = guest.ran
    assert shell is False and timeout == settings.step_timeout
    assert argv[:4] == [SYSTEM_PYTHON, "-I", "-c", WINDOWS_HELPER.read_text()]
    assert argv[4] == "activate"
    assert json.loads(argv[5]) == {"name": name, "strict": True, "by_class": False}
    assert record["ok"] and record["matched"] and record["window"] == "0x1"


def test_close_window_passes_by_class(settings: CheckSettings, cache: TaskCache) -> None:
    guest = WindowGuest(lambda op, args: {"window": "0x2", "how": "WM_DELETE_WINDOW"})
    [record] = run(guest, settings, cache, step("close_window", window_name="x", by_class=True))
    [(argv, _, _)] = guest.ran
    assert argv[4] == "close"
    assert json.loads(argv[5]) == {"name": "x", "strict": False, "by_class": True}
    assert record["matched"] and record["how"] == "WM_DELETE_WINDOW"


@pytest.mark.parametrize("kind", ["activate_window", "close_window"])
def test_no_matching_window_is_recorded_and_the_setup_goes_on(
    kind: str, settings: CheckSettings, cache: TaskCache
) -> None:
    guest = WindowGuest(lambda op, args: {"window": None, "window_manager": False})
    records = run(
        guest, settings, cache, step(kind, window_name="Nothing"), step("sleep", seconds=0)
    )
    assert records[0]["ok"] and records[0]["matched"] is False
    assert records[1]["ok"]


@pytest.mark.parametrize("name", ["", None, 3])
def test_a_missing_window_name_fails_the_step(
    name: Any, settings: CheckSettings, cache: TaskCache
) -> None:
    guest = WindowGuest()
    with pytest.raises(SetupStepFailed, match="window_name"):
        run(guest, settings, cache, step("activate_window", window_name=name))
    assert guest.ran == []


def test_a_helper_that_fails_fails_the_step_with_its_error(
    settings: CheckSettings, cache: TaskCache
) -> None:
    broken = ExecResult(exit_code=1, stderr=b"Xlib.error.DisplayNameError: Bad display name")
    guest = WindowGuest(lambda op, args: broken)
    with pytest.raises(SetupStepFailed, match="DisplayNameError"):
        run(guest, settings, cache, step("activate_window", window_name="x"))


def test_a_helper_that_cannot_start_fails_the_step_naming_the_python(
    settings: CheckSettings, cache: TaskCache
) -> None:
    class NoPython(WindowGuest):
        def exec(self, command: Command, **kwargs: Any) -> ExecResult:
            raise CommandNotStarted(command, "No such file or directory")

    with pytest.raises(SetupStepFailed, match=f"cannot run {SYSTEM_PYTHON}") as failed:
        run(NoPython(), settings, cache, step("close_window", window_name="x"))
    assert "import json" not in str(failed.value)  # not the helper's whole source


# -- open ------------------------------------------------------------------------------------


def opener(
    kind: str, window: str | None = "0x3", path: str = "/home/user/Desktop/a b.odt"
) -> tuple[list[tuple[str, dict[str, Any]]], Helper]:
    """A helper script for ``open``: ``resolve`` says ``kind``, ``wait`` finds ``window``;
    and the list of what it was asked."""
    asked: list[tuple[str, dict[str, Any]]] = []

    def helper(op: str, args: dict[str, Any]) -> dict[str, Any]:
        asked.append((op, args))
        if op == "resolve":
            return {"path": path if kind == "file" else args["path"], "kind": kind}
        return {"window": window, "title": "a b.odt - LibreOffice Writer", "seen": ["terminal"]}

    return asked, helper


def test_open_hands_an_existing_file_to_xdg_open_and_waits_for_its_window(
    settings: CheckSettings, cache: TaskCache
) -> None:
    asked, helper = opener("file")
    guest = WindowGuest(helper)
    [record] = run(guest, settings, cache, step("open", path="~/Desktop/a b.odt"))
    assert asked[0] == ("resolve", {"path": "~/Desktop/a b.odt"})
    assert guest.spawned == [(["xdg-open", "/home/user/Desktop/a b.odt"], False)]
    assert asked[1] == ("wait", {"titles": ["a b.odt", "a b"], "timeout": settings.step_timeout})
    wait_limit = guest.ran[1][2]
    assert wait_limit is not None and wait_limit > settings.step_timeout
    assert record["ok"] and record["window"] == "0x3" and record["opened_with"] == "xdg-open"


def test_open_of_a_missing_file_fails_and_starts_nothing(
    settings: CheckSettings, cache: TaskCache
) -> None:
    _, helper = opener("missing")
    guest = WindowGuest(helper)
    with pytest.raises(SetupStepFailed, match="no file or program") as failed:
        run(guest, settings, cache, step("open", path="~/nothing.txt"))
    assert failed.value.step_type == "open"
    assert guest.spawned == []


def test_open_of_a_program_on_path_starts_it_and_waits_for_its_name(
    settings: CheckSettings, cache: TaskCache
) -> None:
    asked, helper = opener("program")
    guest = WindowGuest(helper)
    run(guest, settings, cache, step("open", path="xterm"))
    assert guest.spawned == [(["xterm"], False)]
    assert asked[1][1]["titles"] == ["xterm"]


def test_open_fails_when_no_window_shows_in_time(settings: CheckSettings, cache: TaskCache) -> None:
    _, helper = opener("file", window=None)
    with pytest.raises(SetupStepFailed, match=r"'a b.odt' or 'a b'.*within 7 s"):
        run(WindowGuest(helper), settings, cache, step("open", path="~/Desktop/a b.odt"))


def test_open_fails_when_xdg_open_cannot_start(settings: CheckSettings, cache: TaskCache) -> None:
    _, helper = opener("file")
    guest = WindowGuest(helper)
    guest.spawn_error = CommandNotStarted(["xdg-open"], "No such file or directory")
    with pytest.raises(SetupStepFailed, match="xdg-open"):
        run(guest, settings, cache, step("open", path="~/Desktop/a b.odt"))


@pytest.mark.parametrize("path", ["", None, ["a"]])
def test_open_needs_a_path(path: Any, settings: CheckSettings, cache: TaskCache) -> None:
    guest = WindowGuest()
    with pytest.raises(SetupStepFailed, match="path"):
        run(guest, settings, cache, step("open", path=path))
    assert guest.ran == []


# -- the helper's own rules ------------------------------------------------------------------


def test_the_helper_resolves_paths_as_osworld_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Desktop").mkdir()
    (tmp_path / "Desktop" / "a.txt").write_text("x")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("WHERE", "Desktop")
    monkeypatch.chdir(tmp_path)
    file = str(tmp_path / "Desktop" / "a.txt")
    assert guest_windows.resolve("~/Desktop/a.txt") == {"path": file, "kind": "file"}
    assert guest_windows.resolve("$HOME/$WHERE/a.txt") == {"path": file, "kind": "file"}
    assert guest_windows.resolve("Desktop/a.txt") == {"path": file, "kind": "file"}
    assert guest_windows.resolve("sh")["kind"] == "program"
    assert guest_windows.resolve("~/Desktop/b.txt")["kind"] == "missing"


class FakeDesktop(guest_windows.Desktop):
    """`Desktop.find` over a list of (title, WM_CLASS) windows, without a display."""

    def __init__(self, windows: list[tuple[str, tuple[str, str]]]) -> None:
        self.listed = [(i, title, cls) for i, (title, cls) in enumerate(windows)]

    def windows(self) -> tuple[bool, list[Any]]:
        return False, self.listed

    def title(self, w: Any) -> str:
        return str(w[1])

    def wm_class(self, w: Any) -> str:
        return ".".join(w[2])


WINDOWS = [
    ("notes.odt - LibreOffice Writer", ("libreoffice", "libreoffice-writer")),
    ("terminal", ("xterm", "XTerm")),
    ("Terminal", ("gnome-terminal-server", "Gnome-terminal")),
]


@pytest.mark.parametrize(
    ("name", "strict", "by_class", "found"),
    [
        ("TERMINAL", False, False, 1),  # wmctrl: a substring, ignoring case, first one
        ("Terminal", True, False, 2),  # -F: the whole title, case and all
        ("terminal - x", False, False, None),
        ("writer", False, False, 0),
        ("xterm.XTerm", True, True, 1),  # -x: WM_CLASS as instance.class
        ("gnome-terminal", False, True, 2),
        ("XTerm", True, True, None),
    ],
)
def test_the_helper_matches_windows_as_wmctrl_does(
    name: str, strict: bool, by_class: bool, found: int | None
) -> None:
    _, w = FakeDesktop(WINDOWS).find(name, strict, by_class)
    assert (w[0] if w is not None else None) == found


def test_the_helper_module_imports_nothing_of_cleanroom() -> None:
    source = WINDOWS_HELPER.read_text()
    assert "cleanroom" not in "".join(
        line for line in source.splitlines() if line.startswith(("import ", "from "))
    )
    assert os.path.basename(guest_windows.__file__) == WINDOWS_HELPER.name
