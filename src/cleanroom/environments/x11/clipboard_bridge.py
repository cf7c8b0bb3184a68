"""The shared-clipboard leak: one owner serving the selections of several displays.

It does what a clipboard synchroniser does: it watches who owns CLIPBOARD and PRIMARY on
every display it bridges; when someone else takes a selection on one display, it reads
the new text and takes that selection on every display, serving the last text set on
any of them. Only leaky setups run it.
"""

from __future__ import annotations

import contextlib
import threading

from Xlib import X
from Xlib import display as xdisplay
from Xlib.error import XError

from cleanroom.environments.x11.clipboard import (
    SELECTIONS,
    ClipboardOwner,
    ClipboardUnreadable,
    read_selection,
)

_POLL_S = 0.02


class ClipboardBridge:
    """Serves one clipboard on several displays; `close` stops it."""

    def __init__(self, display_names: list[str]) -> None:
        self.display_names = list(display_names)
        self._owners = {d: ClipboardOwner(d) for d in self.display_names}
        self._watch = {d: xdisplay.Display(d) for d in self.display_names}
        self._atoms = {d: {s: x.intern_atom(s) for s in SELECTIONS} for d, x in self._watch.items()}
        self._seen: dict[tuple[str, str], int] = {}
        self.copied: list[tuple[str, str, str]] = []  # (display, selection, text), in order
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="clipboard-bridge", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(_POLL_S):
            for d in self.display_names:
                for sel in SELECTIONS:
                    with contextlib.suppress(XError, OSError, ConnectionError):
                        self._check(d, sel)

    def _check(self, display_name: str, selection: str) -> None:
        owner = self._watch[display_name].get_selection_owner(self._atoms[display_name][selection])
        owner_id = 0 if owner == X.NONE else int(owner.id)
        if owner_id in (0, self._owners[display_name].window_id):
            self._seen[(display_name, selection)] = owner_id
            return
        if self._seen.get((display_name, selection)) == owner_id:
            return  # still the owner whose text we already copied
        try:
            text = read_selection(display_name, selection).text
        except ClipboardUnreadable:
            return  # try again on the next poll
        if text is None:
            return
        self._seen[(display_name, selection)] = owner_id
        self.copied.append((display_name, selection, text))
        for owner_obj in self._owners.values():
            owner_obj.set(text, (selection,))

    def close(self) -> None:
        """Stop watching and serving (the selections lose their owner)."""
        self._stop.set()
        self._thread.join(timeout=2)
        for o in self._owners.values():
            with contextlib.suppress(Exception):
                o.close()
        for x in self._watch.values():
            with contextlib.suppress(Exception):
                x.close()
