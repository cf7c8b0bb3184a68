"""Where a Save As dialog shows, and whose it is: dialog_steal's look at every environment.

A look reads each environment's display (its top-level windows, each with the
environment whose program made it) and its accessibility tree (its text items, each
with the environment whose program published it), through the desktop interface
(`Desktops.displayed_windows`, `Desktops.tree_items`, which say how ownership is
judged). So a dialog on a display that two environments share, or in a tree that shows
another environment's programs, is still attributed to the program that opened it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cleanroom.core.detectors import DialogSighting
from cleanroom.environments.errors import PoolError
from cleanroom.environments.interface import Desktops, DisplayedWindow, TreeItem

SAVE_WORD = "save"  # GTK's file chooser is titled "Save" (LibreOffice: "Save As")
DIALOG_ROLES = ("file chooser", "dialog")
FIELD_ROLES = ("text", "entry", "password text")


def is_save_window(window: DisplayedWindow) -> bool:
    """Whether a window's title says Save."""
    return SAVE_WORD in window.title.lower()


def is_save_dialog(item: TreeItem) -> bool:
    """Whether an AT-SPI text item sits in a Save dialog."""
    return item.window_role in DIALOG_ROLES and SAVE_WORD in (item.window or "").lower()


@dataclass
class Look:
    """What every environment showed at one moment."""

    at: float
    windows: dict[str, list[DisplayedWindow]]  # by environment: the Save windows it shows
    trees: dict[str, list[TreeItem] | None]  # by environment; None: unreadable
    errors: dict[str, str] = field(default_factory=dict)

    def window_owner(self, w: DisplayedWindow) -> str | None:
        """The window's process's environment; else the display's, if only one has it."""
        if w.owner is not None:
            return w.owner
        holders = [env for env in w.shown_to if env in self.windows]
        return holders[0] if len(holders) == 1 else None

    def sightings(self) -> list[DialogSighting]:
        """Every Save dialog every environment showed, with its owner."""
        out = set()
        for env, wins in self.windows.items():
            out |= {DialogSighting(env, "display", self.window_owner(w)) for w in wins}
        for env, items in self.trees.items():
            for item in items or []:
                if is_save_dialog(item):
                    out.add(DialogSighting(env, "atspi", item.owner))
        return sorted(out, key=lambda s: (s.seen_in, s.via, str(s.owner)))

    def own_field(self, env: str) -> str | None:
        """The entry fields of ``env``'s own Save dialog in its own tree (None: not there)."""
        fields = [
            i.text or ""
            for i in self.trees.get(env) or []
            if is_save_dialog(i) and i.role in FIELD_ROLES and i.owner == env
        ]
        return "\n".join(sorted(fields)) if fields else None

    def tree_text(self, env: str) -> str | None:
        """All the text ``env``'s AT-SPI tree shows (None: unreadable)."""
        items = self.trees.get(env)
        return None if items is None else "\n".join(i.text or "" for i in items)

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
    """Reads the displays and accessibility trees of ``envs`` and what they attribute."""

    def __init__(self, pool: Desktops, envs: Iterable[str]) -> None:
        self.pool = pool
        self.envs = list(envs)

    def save_windows(self) -> dict[str, list[DisplayedWindow]]:
        """The Save windows on each environment's display."""
        return {
            env: [w for w in self.pool.displayed_windows(env) if is_save_window(w)]
            for env in self.envs
        }

    def any_save_window(self) -> bool:
        """Whether any display shows a Save window."""
        return any(self.save_windows().values())

    def look(self) -> Look:
        """Read every display and every accessibility tree now."""
        trees: dict[str, list[TreeItem] | None] = {}
        errors = {}
        for env in self.envs:
            try:
                trees[env] = self.pool.tree_items(env)
            except PoolError as exc:
                trees[env], errors[env] = None, str(exc)[:200]
        return Look(time.time(), self.save_windows(), trees, errors)
