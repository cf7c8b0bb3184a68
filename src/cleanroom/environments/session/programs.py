"""The programs an environment runs (Writer, Chromium, a terminal) and their launchers.

Each program runs as the environment's user in its session, in its own process group,
with its output in the environment's log folder. A program is ready when its window is
on the display.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cleanroom.environments.errors import StartError
from cleanroom.environments.interface import DOCUMENT, WindowInfo
from cleanroom.environments.session.login import Session
from cleanroom.environments.session.output_log import capped_output
from cleanroom.environments.x11.screen import Screen
from cleanroom.lifecycle import stop_group, wait_until

# How long a program may take to show its window. Generous: a first start of Writer from
# a cold page cache (a new machine, a fresh desktop image) on a loaded 2-core machine
# takes over 40 s, and a pool that gives up on a slow start loses all its work.
READY_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class ProgramKind:
    """How to start one kind of program and how to recognise its window."""

    name: str
    argv: Callable[[Session], list[str]]
    is_window: Callable[[WindowInfo], bool]


# LibreOffice's own start script, not the ``/usr/bin/soffice`` link to it: through the
# link the script finds its folder with ``ls -l``, whose ``statx`` call gVisor's 2022
# kernel refuses (``AT_NO_AUTOMOUNT``: EINVAL), and then finds no ``oosplash``.
SOFFICE = "/usr/lib/libreoffice/program/soffice"


def _writer_argv(s: Session) -> list[str]:
    home = s.account.home
    return [
        SOFFICE,
        f"-env:UserInstallation=file://{s.libreoffice_profile}",
        "--writer",
        "--norestore",
        "--nologo",
        "--nolockcheck",
        str(home / DOCUMENT),
    ]


def _browser_argv(s: Session) -> list[str]:
    w, h = s.screen_size
    return [
        "chromium",
        f"--user-data-dir={s.browser_profile}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-features=Translate,MediaRouter",
        "--password-store=basic",
        "--window-position=0,0",
        f"--window-size={w},{h}",
        "about:blank",
    ]


def _terminal_argv(s: Session) -> list[str]:
    return ["xterm", "-geometry", "120x36+0+0", "-title", "terminal", "-e", "/bin/bash", "-l"]


PROGRAM_KINDS: dict[str, ProgramKind] = {
    "writer": ProgramKind(
        "writer",
        _writer_argv,
        lambda w: w.wm_class == "libreoffice-writer" and "notes" in w.title,
    ),
    "browser": ProgramKind("browser", _browser_argv, lambda w: w.wm_class.lower() == "chromium"),
    "terminal": ProgramKind("terminal", _terminal_argv, lambda w: w.wm_class == "XTerm"),
}


def check_programs(names: tuple[str, ...]) -> tuple[str, ...]:
    """Validate a list of program names; raise `ValueError` naming the unknown ones."""
    unknown = [n for n in names if n not in PROGRAM_KINDS]
    if unknown:
        raise ValueError(
            f"unknown program(s) {', '.join(unknown)}; known: {', '.join(PROGRAM_KINDS)}"
        )
    return names


class ProgramProcess(Protocol):
    """What a program's process offers: a host `Popen`, or a process started in a container."""

    @property
    def pid(self) -> int: ...

    @property
    def args(self) -> Any: ...  # the command line it was started with

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class Program:
    """One running program of an environment."""

    def __init__(self, kind: ProgramKind, proc: ProgramProcess) -> None:
        self.kind = kind
        self.proc = proc
        self.started_at = time.time()
        self.window: WindowInfo | None = None

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        """Whether the program's process still runs."""
        return self.proc.poll() is None

    def stop(self) -> None:
        """End the program's process group."""
        stop_group(self.proc, 0.0, reap_s=5.0)


def launch(name: str, session: Session, log_dir: Path) -> Program:
    """Start one program as the session's user; does not wait for its window."""
    kind = PROGRAM_KINDS[name]
    return Program(kind, _spawn(name, kind.argv(session), session, log_dir))


def launch_writer(
    session: Session, log_dir: Path, profile: Path, document: Path, tag: str
) -> Program:
    """Start a Writer with its own profile on its own document (the positive control runs
    two of these in one session); its window is the one whose title names the document."""
    argv = [
        SOFFICE,
        f"-env:UserInstallation=file://{profile}",
        "--writer",
        "--norestore",
        "--nologo",
        "--nolockcheck",
        str(document),
    ]
    stem = document.stem
    kind = ProgramKind(
        f"writer-{tag}",
        lambda _s: argv,
        lambda w: w.wm_class == "libreoffice-writer" and stem in w.title,
    )
    return Program(kind, _spawn(kind.name, argv, session, log_dir))


def launch_url(name: str, session: Session, log_dir: Path, url: str) -> subprocess.Popen[bytes]:
    """Run the program again with a URL: a running instance opens it and the helper exits."""
    kind = PROGRAM_KINDS[name]
    argv = [a for a in kind.argv(session) if a != "about:blank"] + [url]
    return _spawn(name, argv, session, log_dir)


def _spawn(name: str, argv: list[str], session: Session, log_dir: Path) -> subprocess.Popen[bytes]:
    # A pipe the harness drains under a cap, never the host file itself: whatever gets
    # hold of the program's output descriptor cannot write past the cap.
    with capped_output(log_dir / f"{name}.log") as out:
        try:
            return session.spawn(argv, stdout=out, stderr=out)
        except OSError as exc:
            raise StartError(f"cannot start {name}: {exc}") from exc


def wait_ready(programs: list[Program], screen: Screen, timeout_s: float = READY_TIMEOUT_S) -> None:
    """Wait until every program shows its window; raise `StartError` if one dies or is late."""
    pending = list(programs)

    def all_shown() -> bool:
        if not pending:
            return True
        windows = screen.windows()
        for program in list(pending):
            if not program.alive():
                raise StartError(f"{program.name} exited with {program.proc.returncode}")
            match = [w for w in windows if program.kind.is_window(w)]
            if match:
                program.window = match[-1]
                pending.remove(program)
        return not pending

    if not wait_until(all_shown, timeout_s, 0.05):
        names = ", ".join(p.name for p in pending)
        raise StartError(f"no window from {names} after {timeout_s:g} s")
