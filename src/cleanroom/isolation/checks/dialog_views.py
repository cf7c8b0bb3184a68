"""Where a Save As dialog shows, and whose it is: dialog_steal's look at every environment.

A look reads each environment's display (its top-level windows and, from the X server,
the host pid of the client that made each) and its AT-SPI tree (its text items, with the
top-level window and the process of each, as the PID namespace of the tree's bus numbers
it: a sandbox's own numbers). A dialog's owner is the environment whose program the
dialog's process descends from; so a dialog on a display that two environments share,
or in a tree that shows another environment's programs, is still attributed to the
program that opened it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from Xlib import X
from Xlib import display as xdisplay
from Xlib.error import XError

from cleanroom.core.detectors import DialogSighting
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.session.processes import namespace_pids, pid_namespace, process_tree
from cleanroom.environments.x11.atspi import AtspiUnavailable
from cleanroom.environments.x11.screen import client_pid

SAVE_WORD = "save"  # GTK's file chooser is titled "Save" (LibreOffice: "Save As")
DIALOG_ROLES = ("file chooser", "dialog")
FIELD_ROLES = ("text", "entry", "password text")


@dataclass(frozen=True)
class SaveWindow:
    """A mapped top-level X window whose title says Save."""

    display: str
    id: int
    title: str
    pid: int | None  # the host pid of the client that made it (from the X server)


def save_windows(display_name: str) -> list[SaveWindow]:
    """The Save windows a display shows right now."""
    x = xdisplay.Display(display_name)
    try:
        out = []
        for w in x.screen().root.query_tree().children:
            try:
                if w.get_attributes().map_state != X.IsViewable:
                    continue
                title = w.get_wm_name()
                title = title.decode("latin-1") if isinstance(title, bytes) else (title or "")
                if SAVE_WORD not in title.lower():
                    continue
            except XError:
                continue  # the window went away while we looked
            out.append(SaveWindow(display_name, w.id, title, client_pid(x, w.id)))
        return out
    finally:
        x.close()


def is_save_dialog(item: dict[str, Any]) -> bool:
    """Whether an AT-SPI text item sits in a Save dialog."""
    return (
        item.get("window_role") in DIALOG_ROLES
        and SAVE_WORD in str(item.get("window") or "").lower()
    )


@dataclass
class Look:
    """What every environment showed at one moment."""

    at: float
    windows: dict[str, list[SaveWindow]]  # by environment: the Save windows on its display
    trees: dict[str, list[dict[str, Any]] | None]  # by environment; None: unreadable
    owner_of_pid: dict[int, str]  # host pids
    display_of: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)
    # By environment: the owner of each pid as that environment's AT-SPI tree numbers it.
    tree_owners: dict[str, dict[int, str]] = field(default_factory=dict)

    def item_owner(self, env: str, item: dict[str, Any]) -> str | None:
        """The environment whose program published an item of ``env``'s tree."""
        pid = item.get("pid")
        return self.tree_owners.get(env, {}).get(pid) if isinstance(pid, int) else None

    def window_owner(self, w: SaveWindow) -> str | None:
        """The window's process's environment; else the display's, if only one has it."""
        if w.pid is not None and w.pid in self.owner_of_pid:
            return self.owner_of_pid[w.pid]
        holders = [env for env, d in self.display_of.items() if d == w.display]
        return holders[0] if len(holders) == 1 else None

    def sightings(self) -> list[DialogSighting]:
        """Every Save dialog every environment showed, with its owner."""
        out = set()
        for env, wins in self.windows.items():
            out |= {DialogSighting(env, "display", self.window_owner(w)) for w in wins}
        for env, items in self.trees.items():
            for item in items or []:
                if is_save_dialog(item):
                    out.add(DialogSighting(env, "atspi", self.item_owner(env, item)))
        return sorted(out, key=lambda s: (s.seen_in, s.via, str(s.owner)))

    def own_field(self, env: str) -> str | None:
        """The entry fields of ``env``'s own Save dialog in its own tree (None: not there)."""
        fields = [
            str(i.get("text") or "")
            for i in self.trees.get(env) or []
            if is_save_dialog(i) and i.get("role") in FIELD_ROLES and self.item_owner(env, i) == env
        ]
        return "\n".join(sorted(fields)) if fields else None

    def tree_text(self, env: str) -> str | None:
        """All the text ``env``'s AT-SPI tree shows (None: unreadable)."""
        items = self.trees.get(env)
        return None if items is None else "\n".join(str(i.get("text") or "") for i in items)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary for the evidence folder."""
        return {
            "at": self.at,
            "save_windows": {
                env: [{"title": w.title, "pid": w.pid, "owner": self.window_owner(w)} for w in ws]
                for env, ws in self.windows.items()
            },
            "sightings": [s.__dict__ for s in self.sightings()],
            "unreadable_trees": self.errors,
        }


class DialogViews:
    """Reads the displays and AT-SPI trees of ``envs`` and attributes what they show."""

    def __init__(self, pool: Pool, envs: Iterable[str]) -> None:
        self.pool = pool
        self.envs = list(envs)

    def owner_of_pid(self) -> dict[int, str]:
        """Every process of every environment's programs, by pid."""
        owners: dict[int, str] = {}
        for name in self.pool.names:
            for program in self.pool.env(name).programs:
                owners.update(dict.fromkeys(process_tree(program.pid), name))
        return owners

    def tree_owners(self) -> dict[str, dict[int, str]]:
        """For each environment's AT-SPI tree, every program process by the pid the tree
        gives it: the tree's bus runs in its session's sandbox, whose PID namespace numbers
        the processes it can see (those of the same sandbox); without a sandbox, host pids.
        """
        out: dict[str, dict[int, str]] = {}
        for env in self.envs:
            seen_from = self._bus_namespace(env)
            owners: dict[int, str] = {}
            for name in self.pool.names:
                if self._bus_namespace(name) != seen_from:
                    continue  # invisible from that namespace
                depth = 0 if seen_from[1] is None else 1
                for program in self.pool.env(name).programs:
                    for pid in process_tree(program.pid):
                        numbers = namespace_pids(pid)
                        if len(numbers) > depth:
                            owners[numbers[depth]] = name
            out[env] = owners
        return out

    def _bus_namespace(self, env: str) -> tuple[str, int | None]:
        """Whose sandbox runs ``env``'s session bus, and that sandbox's PID namespace."""
        running = self.pool.env(env).running
        session = running.session if running is not None else None
        if session is not None and session.host is not None:
            session = session.host
        sandbox = session.sandbox if session is not None else None
        if sandbox is None:
            return ("host", None)
        return (sandbox.name, pid_namespace(sandbox.init_pid))

    def display_of(self) -> dict[str, str]:
        """Each environment's display name."""
        out = {}
        for name in self.envs:
            running = self.pool.env(name).running
            if running is not None:
                out[name] = running.display.name
        return out

    def save_windows(self) -> dict[str, list[SaveWindow]]:
        """The Save windows on each environment's display (each display read once)."""
        by_display: dict[str, list[SaveWindow]] = {}
        out = {}
        for env, name in self.display_of().items():
            if name not in by_display:
                by_display[name] = []
                with contextlib.suppress(XError, OSError, ConnectionError):
                    by_display[name] = save_windows(name)
            out[env] = by_display[name]
        return out

    def any_save_window(self) -> bool:
        """Whether any display shows a Save window."""
        return any(self.save_windows().values())

    def look(self) -> Look:
        """Read every display and every AT-SPI tree now."""
        trees: dict[str, list[dict[str, Any]] | None] = {}
        errors = {}
        for env in self.envs:
            running = self.pool.env(env).running
            try:
                if running is None:
                    raise AtspiUnavailable("no AT-SPI reader")
                trees[env] = running.atspi.texts()
            except AtspiUnavailable as exc:
                trees[env], errors[env] = None, str(exc)[:200]
        return Look(
            time.time(),
            self.save_windows(),
            trees,
            self.owner_of_pid(),
            self.display_of(),
            errors,
            self.tree_owners(),
        )
