"""Whose is what an environment shows: the windows on its display and the objects of its
accessibility tree, each attributed to the environment whose program made it.

A window is attributed by the host pid of its X client (X-Resource, never the window's
own ``_NET_WM_PID``, which any client may write) within a program's process tree. A tree
object carries its process as the PID namespace of the tree's bus numbers it (a
sandbox's own numbers): it is attributed among the programs that namespace can see. So a
window on a display two environments share, or a tree that shows another environment's
programs, is still attributed to the program that made it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from Xlib import X
from Xlib import display as xdisplay
from Xlib.error import ConnectionClosedError, DisplayError, XError

from cleanroom.environments.interface import DisplayedWindow, TreeItem
from cleanroom.environments.pool.environment import DesktopEnvironment
from cleanroom.environments.session.processes import namespace_pids, pid_namespace, process_trees
from cleanroom.environments.x11.atspi import AtspiUnavailable
from cleanroom.environments.x11.deadline import DisplayUnanswered, deadline
from cleanroom.environments.x11.screen import client_pid


def process_owners(envs: Mapping[str, DesktopEnvironment]) -> dict[int, str]:
    """Every process of every environment's programs, by host pid, with its environment
    (one look at ``/proc`` for them all)."""
    roots = {p.pid: name for name, env in envs.items() for p in env.programs}
    owners: dict[int, str] = {}
    for root, tree in process_trees(roots).items():
        owners.update(dict.fromkeys(tree, roots[root]))
    return owners


def displayed_windows(envs: Mapping[str, DesktopEnvironment], name: str) -> list[DisplayedWindow]:
    """The mapped top-level windows on ``name``'s display, each with its owner."""
    live = envs[name].running
    if live is None:
        return []
    display = live.display.name
    shown_to = tuple(
        n for n, e in envs.items() if e.running is not None and e.running.display.name == display
    )
    owners = process_owners(envs)
    out: list[DisplayedWindow] = []
    # A server a client holds (a grab) answers nobody else: the look has a deadline, and
    # a held display is its environment's own act (`DesktopEnvironment.own_display`).
    with envs[name].own_display("listing windows"), deadline() as limit:
        try:
            with contextlib.suppress(XError, OSError, ConnectionError):
                x = xdisplay.Display(display)
                try:
                    out = _windows(x, owners, shown_to)
                finally:
                    x.close()
        except (ConnectionClosedError, DisplayError):  # the deadline shut it, or not
            if not limit.expired:
                raise
        if limit.expired:
            raise DisplayUnanswered(display, limit.seconds, "listing windows", limit.stalled)
    return out


def _windows(x: Any, owners: Mapping[int, str], shown_to: tuple[str, ...]) -> list[DisplayedWindow]:
    out = []
    for w in x.screen().root.query_tree().children:
        try:
            if w.get_attributes().map_state != X.IsViewable:
                continue
            title = w.get_wm_name()
            title = title.decode("latin-1") if isinstance(title, bytes) else (title or "")
        except XError:
            continue  # the window went away while we looked
        pid = client_pid(x, w.id)
        owner = owners.get(pid) if pid is not None else None
        out.append(DisplayedWindow(w.id, title, pid, owner, shown_to))
    return out


def tree_items(envs: Mapping[str, DesktopEnvironment], name: str) -> list[TreeItem]:
    """The text objects of ``name``'s accessibility tree, each with its owner;
    `AtspiUnavailable` when the tree cannot be read."""
    live = envs[name].running
    if live is None:
        raise AtspiUnavailable(f"{name}: no AT-SPI reader (the desktop is not running)")
    owners = _owners_seen_from(envs, name)
    with envs[name].own_display("reading the accessibility tree"):
        items = live.atspi.texts()
    return [
        TreeItem(
            app=_text(i.get("app")),
            role=_text(i.get("role")),
            name=_text(i.get("name")),
            text=_text(i.get("text")),
            window=_text(i.get("window")),
            window_role=_text(i.get("window_role")),
            owner=owners.get(pid) if isinstance(pid := i.get("pid"), int) else None,
        )
        for i in items
    ]


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _owners_seen_from(envs: Mapping[str, DesktopEnvironment], name: str) -> dict[int, str]:
    """Every program process, by the pid ``name``'s tree gives it: the tree's bus runs in
    its session's sandbox, whose PID namespace numbers the processes of that sandbox;
    without a sandbox, host pids."""
    seen_from = _bus_namespace(envs[name])
    visible = {n for n, env in envs.items() if _bus_namespace(env) == seen_from}
    depth = 0 if seen_from[1] is None else 1
    owners: dict[int, str] = {}
    for pid, other in process_owners(envs).items():
        if other not in visible:
            continue  # invisible from that namespace
        numbers = namespace_pids(pid)
        if len(numbers) > depth:
            owners[numbers[depth]] = other
    return owners


def _bus_namespace(env: DesktopEnvironment) -> tuple[str, int | None]:
    """Whose sandbox runs the environment's session bus, and that sandbox's PID namespace."""
    session = env.running.session if env.running is not None else None
    if session is not None and session.host is not None:
        session = session.host
    sandbox = session.sandbox if session is not None else None
    if sandbox is None:
        return ("host", None)
    return (sandbox.name, pid_namespace(sandbox.init_pid))
