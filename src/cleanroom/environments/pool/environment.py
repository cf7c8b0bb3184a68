"""One desktop environment: account, display, session, programs and the ways to act on them.

This is the effectful object the pool drives. It knows nothing of generations or
policies: the pool decides when to act, reset or recover; this object does it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleanroom.core.breakage import Evidence, Part, Problem
from cleanroom.environments.containers.program_container import ContainerPlan, ProgramContainer
from cleanroom.environments.errors import (
    BadAction,
    DisplayHeld,
    NoSuchWindow,
    SelectionHeld,
    SelectionUnanswered,
    StartError,
)
from cleanroom.environments.interface import (
    AccessibilityTree,
    ClipboardRead,
    CommandResult,
    FileStat,
    FocusedText,
    Kill,
    Places,
    ProcessInfo,
    ScreenSize,
    WindowInfo,
)
from cleanroom.environments.session.accounts import Account, chown_tree
from cleanroom.environments.session.cgroups import memory_count
from cleanroom.environments.session.login import Session
from cleanroom.environments.session.output_log import capped_output, captured_output
from cleanroom.environments.session.port_forward import loopback_port
from cleanroom.environments.session.processes import kill_pids, kill_uid
from cleanroom.environments.session.programs import (
    READY_TIMEOUT_S,
    Program,
    ProgramProcess,
    launch,
    launch_url,
    wait_ready,
)
from cleanroom.environments.session.sandbox import Sandbox
from cleanroom.environments.session.sandbox_spec import SandboxLayout, SandboxProtections
from cleanroom.environments.session.template import LIBREOFFICE_PROFILE, without_document_locks
from cleanroom.environments.x11.atspi import AtspiReader, AtspiUnavailable
from cleanroom.environments.x11.clipboard import (
    ClipboardOwner,
    DisplayUnread,
    OwnerSilent,
    read_selection,
)
from cleanroom.environments.x11.deadline import DisplayUnanswered, probe_server
from cleanroom.environments.x11.display import DisplayView, XvfbDisplay
from cleanroom.environments.x11.screen import Screen
from cleanroom.environments.x11.xauth import write_cookie
from cleanroom.environments.x11.xinput import XInput
from cleanroom.host_files import NotARegularFile, read_beneath, stat_beneath, write_beneath
from cleanroom.lifecycle import stop_group, wait_until

# How a program is told where its profile is, on its command line.
_PROFILE_FLAGS = ("-env:UserInstallation=file://", "--user-data-dir=")
# How long a Writer whose readiness cannot be read through AT-SPI is given to take keys.
_SETTLE_S = 3.0
# The accessibility bus launcher publishes its address as this root-window property.
_ATSPI_BUS_PROPERTY = "AT_SPI_BUS"
# A Writer window whose document has not reached the AT-SPI bus by then gets a fresh
# reader, and at half the start time a fresh Writer (a start that lost its bus).
_READER_RETRY_S = 8.0
# A Writer started on a shared profile reaches the donor's running Writer, hands it the
# document and exits within seconds; one still running by then found no donor to reach
# (the donor was itself being started again) and never will.
_HAND_OFF_S = 45.0
# How long a command's output is read once it was ended for its deadline.
_CAPTURE_AFTER_KILL_S = 2.0


@dataclass(frozen=True)
class EnvSpec:
    """What an environment is made of."""

    name: str
    user: str
    home: Path
    runtime_dir: Path
    log_dir: Path
    programs: tuple[str, ...]
    screen: ScreenSize = field(default_factory=ScreenSize)
    container: ContainerPlan | None = None  # run the programs in a container of their own
    # Everything of the account runs in a sandbox of its own (see `sandbox`); only a
    # leaky setup turns it off, to show what the channels check finds on an open host.
    sandboxed: bool = True
    # Its sandbox's filter, own inodes and limits (`sandbox_spec`); a leaky setup may
    # turn one of them off.
    protections: SandboxProtections = field(default_factory=SandboxProtections)
    # Its display's server runs in a sandbox of its own (`x11.display.DisplayView`); only
    # a leaky setup starts it on the host as root, where it reads any folder for a client.
    display_sandboxed: bool = True


@dataclass
class Borrowed:
    """What a leaky setup makes this environment borrow from another (the donor).

    The donor is read at each (re)start, so a donor rebuilt with a new display is
    followed. ``libreoffice_profile`` replaces the profile Writer starts with: the
    donor's (the profile is shared) or a private one outside the usual place (the home
    is shared but the profile must not be).
    """

    donor: DesktopEnvironment
    display: bool = False
    session: bool = False
    libreoffice_profile: Path | None = None

    @property
    def hands_off_writer(self) -> bool:
        """Whether our Writer start goes to the donor's running instance (same profile)."""
        donor_profile = self.donor.account.home / LIBREOFFICE_PROFILE
        return self.libreoffice_profile == donor_profile


@dataclass
class Running:
    """A started desktop: its login session, its display and the harness's connections
    to it. Every part is there; an environment whose desktop is not running has none."""

    session: Session
    display: XvfbDisplay
    input: XInput
    clipboard: ClipboardOwner
    screen: Screen
    atspi: AtspiReader

    def connections(self) -> tuple[XInput, ClipboardOwner, Screen, AtspiReader]:
        """The harness's connections to the display, for closing."""
        return (self.input, self.clipboard, self.screen, self.atspi)


def _stop_sandbox(session: Session) -> None:
    if session.sandbox is not None:
        session.sandbox.stop()
        session.sandbox = None


def _close_all(connections: Iterable[XInput | ClipboardOwner | Screen | AtspiReader]) -> None:
    for connection in connections:
        with contextlib.suppress(Exception):
            connection.close()


class DesktopEnvironment:
    """A running environment. Build with `create`; `destroy` removes everything it made."""

    def __init__(self, spec: EnvSpec, account: Account, template: Path) -> None:
        self.spec = spec
        self.account = account
        self.template = template
        self.running: Running | None = None  # set by `start_desktop`
        self.programs: list[Program] = []
        # Its programs' container, in containers mode, while they run.
        self.container: ProgramContainer | None = None
        self.ready_at: float | None = None
        self.borrow: Borrowed | None = None  # set by the pool for a leaky setup
        self.handed_off: list[Program] = []  # Writer starts that went to another instance
        self.remedies: list[str] = []  # what the last start of the programs had to retry

    @property
    def live(self) -> Running:
        """The started desktop; `StartError` when it is not running."""
        if self.running is None:
            raise StartError(f"{self.name}: the desktop is not running")
        return self.running

    @property
    def name(self) -> str:
        return self.spec.name

    @classmethod
    def create(
        cls,
        spec: EnvSpec,
        template: Path,
        *,
        account: Account | None = None,
        fill_home: bool = True,
    ) -> DesktopEnvironment:
        """Create the account and its home (from the template); nothing runs yet.

        With ``account`` (a borrowed one, see `Account.lend`) no user is made; the home
        is restored unless it is the lender's own, which is already in use. Without
        ``fill_home`` the home is left empty, for `restore_home` before the programs start.
        """
        own = account is None
        account = account or Account.create(spec.user, spec.home)
        env = cls(spec, account, template)
        try:
            limits = spec.protections.limits
            # Its own account's home gets a file system of its own. A borrowed account (a
            # leaky setup's) keeps the home it works in on the host's: Writer's handoff of
            # the shared-profile setup does not come through a home of its own.
            if limits is not None and own:
                account.bound_home(limits.home_mib)
            if not fill_home:
                account.empty_home()
            elif own or not account.home.exists():
                account.restore_home(template)
        except BaseException:
            account.remove()
            raise
        return env

    @property
    def owns_display(self) -> bool:
        """Whether this environment started its display (a borrowed one is the donor's)."""
        return self.borrow is None or not self.borrow.display

    # -- the display and session, which live until the environment is destroyed or crashes

    def start_desktop(self) -> None:
        """Start the display, the session bus and the harness's connections to them."""
        self.spec.log_dir.mkdir(parents=True, exist_ok=True)
        borrow = self.borrow
        if borrow is not None and borrow.session:
            session = Session.join(self.account, borrow.donor.live.session, "")
        else:
            limits = self.spec.protections.limits
            session = Session.prepare(
                self.account,
                self.spec.runtime_dir,
                "",
                size_mib=limits.tmpfs_mib if limits is not None else None,
            )
        session.screen_size = (self.spec.screen.width, self.spec.screen.height)
        if borrow is not None and borrow.libreoffice_profile is not None:
            session.libreoffice_profile = borrow.libreoffice_profile
        try:
            if borrow is not None and borrow.display:
                display = borrow.donor.live.display
                # Our programs may open the donor's display: its cookie goes in our file.
                write_cookie(session.xauthority, display.number, display.cookie)
            else:
                display = XvfbDisplay.start(
                    session.xauthority,
                    self.spec.screen,
                    log=self.spec.log_dir / "xvfb.log",
                    view=self._display_view(),
                )
        except BaseException:
            session.remove()
            raise
        session.display = display.name
        opened: list[XInput | ClipboardOwner | Screen | AtspiReader] = []
        try:
            session.sandbox = self._start_sandbox(session, display)
            session.start_bus()
            opened.append(xin := XInput(display.name))
            opened.append(clipboard := ClipboardOwner(display.name))
            opened.append(screen := Screen(display.name))
            opened.append(atspi := AtspiReader(session))
        except BaseException:
            _close_all(opened)
            self._end_session_processes(session)
            if self.owns_display:
                display.stop()
            session.remove()
            raise
        self.running = Running(session, display, xin, clipboard, screen, atspi)

    def end_processes(self) -> None:
        """End every process of the account (its sandbox, programs, session bus and
        whatever it left outside a sandbox); the display and the harness's connections
        to it stay, for `stop_desktop`."""
        if self.running is None:
            self.stop_programs()
            kill_uid(self.account.uid)
            return
        self._end_session_processes(self.running.session)

    def _end_session_processes(self, session: Session) -> None:
        _stop_sandbox(session)  # every process in it at once (see `restart_session`)
        self.stop_programs()
        session.stop_bus()
        kill_uid(self.account.uid)  # anything left outside a sandbox (a leaky setup's)

    def stop_desktop(self) -> None:
        """End programs, every process of the account, the connections and the display."""
        self.end_processes()
        running, self.running = self.running, None
        if running is None:
            return
        _close_all(running.connections())
        if self.owns_display:
            running.display.stop()
        running.session.remove()

    # -- programs ------------------------------------------------------------------------

    def start_programs(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Start the configured programs and wait until each shows its window."""
        live = self.live
        names = list(self.spec.programs)
        self._prepare_private_profile()
        self.handed_off = []
        self.remedies = []
        if self.borrow is not None and self.borrow.hands_off_writer and "writer" in names:
            # The shared-profile trap: this start reaches the donor's running Writer,
            # which opens our document on the donor's display, and then exits.
            names.remove("writer")
            self.handed_off = [self._hand_off_writer(timeout_s)]
        if self.spec.container is not None:
            self.container = ProgramContainer.start(
                self.spec.container,
                live.session,
                live.display.number,
                self.spec.log_dir,
                self.spec.protections.limits,
            )
            self.programs = [self.container.launch(name) for name in names]
        else:
            self.programs = [launch(name, live.session, self.spec.log_dir) for name in names]
        wait_ready(self.programs, live.screen, timeout_s)
        if "writer" in names and self.owns_display:
            self._wait_document_accessible(timeout_s)
        elif "writer" in names:
            self._wait_second_writer(timeout_s)
        self.ready_at = time.time()

    def _wait_second_writer(self, timeout_s: float) -> None:
        # On a borrowed display our Writer publishes its tree on the donor's AT-SPI bus
        # (the bus address is a property of the display's root window), which refuses
        # our user: readiness is our window beside the donor's, then time to take keys.
        screen = self.live.screen

        def two_writers() -> bool:
            writers = [w for w in screen.windows() if w.wm_class == "libreoffice-writer"]
            return len(writers) >= 2

        if not wait_until(two_writers, timeout_s, 0.1):
            raise StartError(f"{self.name}: no second Writer window on the borrowed display")
        time.sleep(_SETTLE_S)

    def _prepare_private_profile(self) -> None:
        # A borrowed home holds the donor's profile; ours is a separate copy beside it.
        borrow = self.borrow
        if borrow is None or borrow.libreoffice_profile is None or borrow.hands_off_writer:
            return
        profile = borrow.libreoffice_profile
        if not profile.exists():
            shutil.copytree(self.template / LIBREOFFICE_PROFILE, profile, symlinks=True)
            # The donor's Writer holds the shared document open; without this ours stops
            # at "Document in Use" instead of opening it too.
            settings = profile / "user" / "registrymodifications.xcu"
            settings.write_text(without_document_locks(settings.read_text()))
            chown_tree(profile, self.account.uid, self.account.gid)

    def _hand_off_writer(self, timeout_s: float) -> Program:
        program = launch("writer", self.live.session, self.spec.log_dir)
        try:
            program.proc.wait(timeout=min(timeout_s, _HAND_OFF_S))
        except subprocess.TimeoutExpired:
            program.stop()
            raise StartError(f"{self.name}: Writer did not hand its document over") from None
        return program

    def _wait_document_accessible(self, timeout_s: float) -> None:
        # Writer maps its window before it takes keys; once its document paragraph is on
        # the accessibility bus, typed keys land in the document. A reader that connected
        # before the bus was up, or a Writer that started without its bus, would wait
        # forever: each gets one fresh start on the way (no Writer restart in a container).
        # A bus address left on the display by a bus that died before it could remove it
        # is the usual cause; it is forgotten before Writer starts again.
        atspi = self.live.atspi
        started = time.monotonic()
        remedies = [(started + _READER_RETRY_S, "a fresh reader", atspi.close)]
        if self.container is None:
            remedies.append((started + timeout_s / 2, "a fresh Writer", self._restart_writer))
        tried = self.remedies

        def accessible() -> bool:
            with contextlib.suppress(AtspiUnavailable):
                if atspi.has_paragraph():
                    return True
            if remedies and time.monotonic() > remedies[0][0]:
                _, what, remedy = remedies.pop(0)
                tried.append(what)
                remedy()
            return False

        if wait_until(accessible, timeout_s, 0.1):
            return
        try:
            seen = _what_the_bus_shows(atspi.texts())
        except AtspiUnavailable as exc:
            seen = f"a reader failure ({exc})"
        raise StartError(
            f"{self.name}: Writer's document never appeared on the AT-SPI bus in "
            f"{timeout_s:g} s (tried {' and '.join(tried) or 'nothing else'}; "
            f"the bus showed {seen})"
        )

    def _restart_writer(self) -> None:
        live = self.live
        self._forget_accessibility_bus()
        for program in [p for p in self.programs if p.name == "writer"]:
            program.stop()
            self.programs.remove(program)
            fresh = launch("writer", live.session, self.spec.log_dir)
            self.programs.append(fresh)
            wait_ready([fresh], live.screen)

    def stop_programs(self) -> None:
        """End every program (and, through the account, anything they started)."""
        for program in self.programs:
            program.stop()
        self.programs = []
        if self.container is not None:
            self.container.remove()  # a fresh one comes with the next start
            self.container = None
        if self.running is not None:
            with contextlib.suppress(Exception):
                self.running.input.release_all()

    def restart_session(self) -> None:
        """End every process of the account (programs, session bus, AT-SPI bus, reader,
        anything a policy left running) and start a fresh session bus.

        The display stays: it belongs to the harness, not to the account.
        """
        live = self.live
        # The sandbox first: its end takes every process in it at once, where ending the
        # programs one by one first leaves their orphans to die slowly with the sandbox.
        _stop_sandbox(live.session)
        self.stop_programs()
        live.session.stop_bus()
        # No grace period: the home is thrown away next, so nothing needs a clean exit.
        kill_uid(self.account.uid, grace_s=0.0)
        self._forget_accessibility_bus()
        live.session.sandbox = self._start_sandbox(live.session, live.display)
        live.session.start_bus()

    def _display_view(self) -> DisplayView | None:
        if not self.spec.display_sandboxed:
            return None
        return DisplayView(
            owner=self.spec.user,
            hidden=self._hidden(),
            protections=self.spec.protections,
        )

    def _hidden(self) -> tuple[Path, ...]:
        # The folders holding every environment's homes and runtime folders.
        return tuple(dict.fromkeys((self.spec.home.parent, self.spec.runtime_dir.parent)))

    def _start_sandbox(self, session: Session, display: XvfbDisplay) -> Sandbox | None:
        # A fresh one for every session: nothing of a generation's /tmp, IPC objects or
        # loopback services is left for the next.
        if not self.spec.sandboxed:
            return None
        layout = SandboxLayout(
            writable=tuple(dict.fromkeys((self.account.home, session.runtime_dir))),
            hidden=self._hidden(),
            display_number=display.number,
        )
        return Sandbox.start(
            self.name,
            layout,
            self.spec.log_dir / "sandbox.log",
            owner=self.spec.user,
            protections=self.spec.protections,
        )

    def _forget_accessibility_bus(self) -> None:
        # A bus launcher killed before it could clean up leaves its address on the
        # display; programs that read it publish their tree to a dead bus, for good. With
        # the address gone they ask the session bus, which starts a new one (and it
        # publishes its own address).
        if self.owns_display and self.running is not None:
            self.running.screen.delete_root_property(_ATSPI_BUS_PROPERTY)

    def restore_home(self) -> None:
        """Replace the home with a fresh copy of the template."""
        self.account.restore_home(self.template)

    def clear_clipboard(self) -> None:
        """Leave CLIPBOARD and PRIMARY without an owner."""
        if self.running is not None:
            self.running.clipboard.clear()

    def open_url(self, url: str) -> None:
        """Ask the running browser for a new tab at ``url`` and wait until it shows."""
        live = self.live
        if not any(p.name == "browser" and p.alive() for p in self.programs):
            raise StartError(f"{self.name} runs no browser")
        if not url.startswith(("http://", "https://", "about:")):
            raise BadAction(f"only http(s) and about: URLs can be opened, got {url!r}")
        port = loopback_port(url)
        # The page's port, and only it, is forwarded to where the browser runs.
        where = self.container or live.session.sandbox
        if port is not None and where is not None:
            where.forward_port(port)
        if self.container is not None:
            helper: ProgramProcess = self.container.launch_url("browser", url)
        else:
            helper = launch_url("browser", live.session, self.spec.log_dir, url)
        with contextlib.suppress(subprocess.TimeoutExpired):
            helper.wait(timeout=15)  # the helper hands the URL to the running browser

    # -- commands inside the environment -------------------------------------------------

    @property
    def python(self) -> str:
        """The environment's own Python (the host's in a sandbox, the image's in a container)."""
        return "python3" if self.container is not None else "/usr/bin/python3"

    def start_inside(self, argv: list[str], log_name: str) -> tuple[ProgramProcess, Path]:
        """Start ``argv`` where the environment's programs run (its sandbox or container),
        as its user, with its output in a log file of its own (through `capped_output`);
        return it and the file."""
        session = self.live.session
        log = self.spec.log_dir / f"{log_name}.log"
        log.unlink(missing_ok=True)
        if self.container is not None:
            return self.container.exec(log_name, argv), log
        with capped_output(log) as out:
            return session.spawn(argv, stdout=out, stderr=out), log

    def run_inside(self, argv: list[str], timeout_s: float = 60.0) -> tuple[int, str]:
        """Run ``argv`` where the environment's programs run, as its user; its exit code
        and output, the first `CAPTURED_OUTPUT_MAX_BYTES` of it
        (`subprocess.TimeoutExpired` after ``timeout_s``)."""
        session = self.live.session
        if self.container is not None:
            return self.container.run(argv, timeout_s)
        deadline = time.monotonic() + timeout_s
        # Its output is kept up to a cap; a process that holds the pipe open after the
        # command ends (its child, or one that took the descriptor) holds us only until
        # the deadline.
        with captured_output() as (out, capture):
            proc = session.spawn(argv, stdout=out, stderr=out)
        try:
            proc.wait(timeout=timeout_s)
            if not capture.wait(max(deadline - time.monotonic(), 0.0)):
                raise subprocess.TimeoutExpired(argv, timeout_s)
        except subprocess.TimeoutExpired:
            stop_group(proc, 0.0)
            capture.wait(_CAPTURE_AFTER_KILL_S)
            raise
        return proc.returncode, capture.value().decode(errors="replace")

    # -- health --------------------------------------------------------------------------

    def problems(self) -> list[str]:
        """What is wrong with the environment right now (empty when healthy)."""
        return [p.detail for p in self.damage()]

    def damage(self) -> list[Problem]:
        """Every part of the environment found dead right now (empty when healthy)."""
        live = self.running
        if live is None:
            return [
                Problem(Part.DISPLAY, "display is dead"),
                Problem(Part.SESSION_BUS, "session bus is dead"),
            ]
        out = []
        if not live.display.alive():
            out.append(Problem(Part.DISPLAY, "display is dead"))
        if not live.session.bus_alive():
            out.append(Problem(Part.SESSION_BUS, "session bus is dead"))
        if self.spec.sandboxed:
            sandbox = live.session.sandbox
            if sandbox is None or not sandbox.alive():
                out.append(Problem(Part.SANDBOX, "sandbox is dead"))
        out.extend(
            Problem(Part.PROGRAM, f"{p.name} (pid {p.pid}) is dead")
            for p in self.programs
            if not p.alive()
        )
        for what, connection in (
            ("input", live.input),
            ("clipboard", live.clipboard),
            ("screen", live.screen),
        ):
            if connection.closed:
                out.append(closed_connection(what, connection.shut_by))
        if out and self.container is not None and not self.container.running():
            out.append(
                Problem(Part.CONTAINER, f"its container {self.container.name} is not running")
            )
        return out

    def evidence(self, injected: str | None = None) -> Evidence:
        """What `core.breakage.judge` reads to say who broke the environment: what is dead,
        and what the memory controller counted for its display's and its own cgroups."""
        problems = tuple(self.damage())
        if not problems:
            return Evidence(problems, injected=injected)
        live = self.running
        display = live.display.sandbox if live is not None and self.owns_display else None
        own: str | None = None
        if self.container is not None:
            own = self.container.id
        elif live is not None and live.session.sandbox is not None:
            own = live.session.sandbox.container
        return Evidence(
            problems,
            display_memory=memory_count(display.container) if display is not None else None,
            env_memory=memory_count(own) if own is not None else None,
            # The runtime is asked only about a container found stopped: the one case
            # where the rule reads its word (`damage` asked once already).
            container_oom_killed=self.container is not None
            and any(p.part is Part.CONTAINER for p in problems)
            and self.container.oom_killed(),
            injected=injected,
        )

    # -- acting (`interface.ActionTarget`) -----------------------------------------------

    def type_text(self, text: str) -> None:
        """Type ``text`` into the focused window."""
        with self.own_display("input"):
            self.live.input.type_text(text)

    def key_down(self, key: str) -> None:
        """Hold a key down."""
        with self.own_display("input"):
            self.live.input.key_down(key)

    def key_up(self, key: str) -> None:
        """Release a key."""
        with self.own_display("input"):
            self.live.input.key_up(key)

    def hotkey(self, keys: str) -> None:
        """Press a combination such as ``ctrl+s``."""
        with self.own_display("input"):
            self.live.input.hotkey(keys)

    def click(self, x: int, y: int, button: int = 1, count: int = 1) -> None:
        """Click at screen coordinates."""
        with self.own_display("input"):
            self.live.input.click(x, y, button, count)

    def move(self, x: int, y: int) -> None:
        """Move the pointer."""
        with self.own_display("input"):
            self.live.input.move(x, y)

    def focus_window(self, window_id: int) -> None:
        """Raise a window and give it the focus."""
        with self.own_display("focusing a window"):
            self.live.input.focus(window_id)

    def focus_program(self, program: str) -> None:
        """Raise a program's window and give it the focus (`NoSuchWindow`: none shows)."""
        window = self.window_of(program)
        if window is None:
            raise NoSuchWindow(f"{self.name} shows no {program} window")
        with self.own_display("focusing a window"):
            self.live.input.focus(window.id)

    def set_clipboard(self, text: str, selections: tuple[str, ...] = ("CLIPBOARD",)) -> None:
        """Own the selections with ``text``."""
        with self.own_display("setting the clipboard"):
            self.live.clipboard.set(text, selections)

    # -- observing -----------------------------------------------------------------------

    def screenshot_png(self) -> bytes:
        """The screen as PNG."""
        with self.own_display("a screenshot"):
            return self.live.screen.screenshot_png()

    def pixels(self) -> tuple[int, int, bytes]:
        """The screen as raw RGB: (width, height, bytes)."""
        with self.own_display("a screenshot"):
            return self.live.screen.grab_rgb()

    def windows(self) -> list[WindowInfo]:
        """Top-level windows."""
        with self.own_display("listing windows"):
            return self.live.screen.windows()

    def focused_text(self) -> FocusedText:
        """The focused text through AT-SPI."""
        with self.own_display("reading the focused text"):
            return self.live.atspi.focused()

    def accessibility_tree(self) -> AccessibilityTree:
        """The accessibility tree of this environment's own bus, in OSWorld's XML format."""
        with self.own_display("reading the accessibility tree"):
            return self.live.atspi.accessibility_tree()

    @contextlib.contextmanager
    def own_display(self, doing: str) -> Iterator[None]:
        """Observe or act on the display; a request its server held unanswered while idle
        (a server grab by a client of the display) raises `DisplayHeld`, the environment's
        own act: the harness never grabs, and only the environment's programs reach its
        display. A server that is busy, stopped or gone leaves the error as it was.

        Where the failed read's own connection cannot be looked at (a screenshot's runs
        in mss, a tree's in the AT-SPI reader), the server is probed on a fresh one."""
        try:
            yield
        except (DisplayUnanswered, AtspiUnavailable) as exc:
            server = exc.server if isinstance(exc, DisplayUnanswered) else None
            if server is None and self.running is not None:
                server = probe_server(self.running.display.name)
            if server is not None and server.held:
                raise DisplayHeld(self.name, doing, server.pid, server.unread) from exc
            raise

    def read_clipboard(self, selection: str = "CLIPBOARD") -> ClipboardRead:
        """Read a selection as any client of this display would. An owner that does not
        answer is `SelectionUnanswered` when it is a program of the environment's; the
        harness's own owner not answering stays `ClipboardUnreadable`. A display whose
        server holds the read unanswered (a grab by a client: the harness never grabs)
        is `SelectionHeld` (a `DisplayHeld`), the environment's own act; a server that
        hangs otherwise stays `ClipboardUnreadable`."""
        live = self.live
        try:
            return read_selection(live.display.name, selection)
        except DisplayUnread as exc:
            server = exc.cause.server
            if server is not None and server.held:
                raise SelectionHeld(self.name, selection, server.pid, server.unread) from exc
            raise
        except OwnerSilent as exc:
            if exc.owner == live.clipboard.window_id:
                raise
            raise SelectionUnanswered(self.name, selection, exc.owner) from exc

    def window_of(self, program: str) -> WindowInfo | None:
        """The current top-level window of a program kind, if it shows one."""
        for p in self.programs:
            if p.name == program:
                match = [w for w in self.windows() if p.kind.is_window(w)]
                return match[-1] if match else None
        return None

    def processes(self) -> list[ProcessInfo]:
        """Its display server (-1 when none runs) and its programs, each with its pid and
        whether it still runs."""
        live = self.running
        display = (
            ProcessInfo("display", live.display.pid, live.display.alive())
            if live is not None
            else ProcessInfo("display", -1, False)
        )
        return [display, *(ProcessInfo(p.name, p.pid, p.alive()) for p in self.programs)]

    def places(self) -> Places:
        """Where its state lives on the host: home, its programs' profiles (those its
        session hands them and those they were started with), runtime and log folders."""
        found: list[Path] = []
        live = self.running
        if live is not None:
            declared = [live.session.libreoffice_profile, live.session.browser_profile]
            found.extend(p for p in declared if p.exists())
        for program in self.programs:
            args = program.proc.args
            argv = [str(a) for a in args] if isinstance(args, list | tuple) else [str(args)]
            found.extend(
                Path(arg[len(flag) :])
                for arg in argv
                for flag in _PROFILE_FLAGS
                if arg.startswith(flag)
            )
        runtime = live.session.runtime_dir if live is not None else self.spec.runtime_dir
        return Places(
            user=self.account.user,
            home=Path(os.path.abspath(self.account.home)),
            profiles=tuple(Path(os.path.abspath(p)) for p in dict.fromkeys(found)),
            runtime_dir=Path(os.path.abspath(runtime)),
            log_dir=Path(os.path.abspath(self.spec.log_dir)),
        )

    def kill(self, scope: Kill) -> None:
        """End every process of its user (a crash), or its programs only, at once."""
        if scope is Kill.EVERYTHING:
            kill_uid(self.account.uid, grace_s=0.0)
        else:
            kill_pids([p.pid for p in self.programs], grace_s=0.0)

    def write_home_file(self, relative: str, data: bytes) -> Path:
        """Plant ``data`` beneath the home, owned by the account, no link followed on the
        way (the file is made new; one already there is replaced)."""
        path = self._beneath_home(relative)
        write_beneath(self.account.home, path, data, self.account.uid, self.account.gid)
        return path

    def stat_home_file(self, relative: str) -> FileStat | None:
        """A file beneath the home as looked at, never through a link; None when nothing
        is there."""
        seen = stat_beneath(self.account.home, self._beneath_home(relative))
        if seen is None:
            return None
        return FileStat(seen.st_size, seen.st_mtime_ns, stat.S_ISREG(seen.st_mode))

    def _beneath_home(self, relative: str) -> Path:
        parts = Path(relative).parts
        if not parts or ".." in parts or Path(relative).is_absolute():
            raise BadAction(f"{relative!r} names no file beneath the home")
        return self.account.home / relative

    def read_home_file(self, relative: str, limit: int) -> bytes | None:
        """A file beneath the home, read no-follow and non-blocking, at most ``limit``
        bytes; None when no regular file of at most ``limit`` bytes is there."""
        try:
            return read_beneath(self.account.home, self._beneath_home(relative), limit)
        except (FileNotFoundError, NotARegularFile):
            return None

    def run_command(self, argv: list[str], timeout_s: float = 60.0) -> CommandResult:
        """`run_inside` as a typed record."""
        code, output = self.run_inside(argv, timeout_s)
        return CommandResult(code, output)

    def describe(self) -> dict[str, Any]:
        """What `status` shows: display, user, home, programs with pids, problems."""
        live = self.running
        display = live.display if live is not None else None
        session = live.session if live is not None else None
        return {
            "name": self.name,
            "display": display.name if display else None,
            "display_pid": display.pid if display else None,
            "display_server": display.describe() if display else None,
            "user": self.account.user,
            "uid": self.account.uid,
            "home": str(self.account.home),
            "runtime_dir": str(self.spec.runtime_dir),
            "xauthority": str(session.xauthority) if session else None,
            "dbus": session.bus_address if session else None,
            "programs": [{"name": p.name, "pid": p.pid, "alive": p.alive()} for p in self.programs],
            "borrows": self._describe_borrow(),
            "container": self.container.name if self.container else None,
            "sandbox": session.sandbox.describe() if session and session.sandbox else None,
            "start_remedies": list(self.remedies),
            "problems": self.problems(),
        }

    def _describe_borrow(self) -> dict[str, Any] | None:
        b = self.borrow
        if b is None:
            return None
        return {
            "from": b.donor.name,
            "display": b.display,
            "session": b.session,
            "account": self.account.borrowed,
            "libreoffice_profile": str(b.libreoffice_profile) if b.libreoffice_profile else None,
            "writer_handed_off": bool(self.handed_off),
        }

    def destroy(self) -> None:
        """Stop everything and remove the account and its home."""
        try:
            self.stop_desktop()
        finally:
            self.account.remove()


def closed_connection(what: str, shut_by: DisplayUnanswered | None) -> Problem:
    """The problem a closed harness connection to the display is: closed by the display
    (a client ended it: ``KillClient``), shut by the harness's deadline while a client
    held the server (a grab), or shut because the server itself stopped answering."""
    if shut_by is None:
        return Problem(
            Part.HARNESS_CONNECTION, f"the display closed the harness's {what} connection"
        )
    if shut_by.held:
        return Problem(
            Part.DISPLAY_HELD,
            f"a client of the display held its server: the harness's {what} connection "
            f"was shut at its deadline ({shut_by})",
        )
    return Problem(
        Part.DISPLAY_STALLED,
        f"its display's server stopped answering: the harness's {what} connection was "
        f"shut at its deadline ({shut_by})",
    )


def _what_the_bus_shows(items: list[dict[str, Any]]) -> str:
    """A short account of a reader's answer, for the error that says Writer never showed."""
    if not items:
        return "no text objects"
    windows = sorted({f"{i.get('app')}/{i.get('window_role')}:{i.get('window')}" for i in items})
    roles = sorted({str(i.get("role")) for i in items})
    return f"{len(items)} text objects, roles {', '.join(roles)}, in {'; '.join(windows[:6])}"
