"""Windows of a guest's display, for the ``open``, ``activate_window`` and ``close_window``
setup steps: run by the system Python in the guest, never imported by the package.

It runs as the guest's user, in its sandbox, on its display (the step runner starts it
through the guest), and takes one operation and its arguments as a JSON object in argv:

    resolve  {"path": P}                              -> {"path", "kind"}
    activate {"name": N, "strict": b, "by_class": b}  -> {"window", "title", "class", ...}
    close    {"name": N, "strict": b, "by_class": b}  -> {"window", "title", "class", "how"}
    wait     {"titles": [T, ...], "timeout": s}       -> {"window", "title", "waited_s", ...}

``kind`` is ``file``, ``program`` or ``missing``.

It prints one JSON object; ``"window": null`` means no window matched. A failure of its
own (no display, no Xlib) is a traceback and a non-zero exit.

OSWorld's server does these with ``wmctrl``, which needs a window manager that answers
EWMH (``_NET_CLIENT_LIST`` on the root window). When the display has one, this does what
``wmctrl`` does: it lists the manager's clients and sends it ``_NET_ACTIVE_WINDOW`` or
``_NET_CLOSE_WINDOW``. When it has none (cleanroom's desktops run no window manager), it
lists the mapped top-level windows that have a title and does what a window manager does
on those requests: raise the window and give it the input focus, or ask it to close with
``WM_DELETE_WINDOW`` (ending its client when it does not take that message).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from typing import Any

from Xlib import X, Xatom
from Xlib import display as xdisplay
from Xlib.error import XError
from Xlib.protocol import event

POLL_S = 1.0  # OSWorld's server looks for an opened file's window once a second
_TO_THE_MANAGER = X.SubstructureRedirectMask | X.SubstructureNotifyMask
_FROM_A_PAGER = 2  # EWMH source indication: a tool acting for the user


class Desktop:
    """One connection to the display named by ``DISPLAY``."""

    def __init__(self) -> None:
        self.x = xdisplay.Display()
        self.root = self.x.screen().root

    def atom(self, name: str) -> int:
        return int(self.x.intern_atom(name))

    def client_list(self) -> list[int] | None:
        """The window manager's clients in the order it manages them; None without one."""
        prop = self.root.get_full_property(self.atom("_NET_CLIENT_LIST"), Xatom.WINDOW)
        return None if prop is None else [int(w) for w in prop.value]

    def windows(self) -> tuple[bool, list[Any]]:
        """Whether a window manager manages the display, and the windows a user sees."""
        managed = self.client_list()
        if managed is not None:
            return True, [self.x.create_resource_object("window", w) for w in managed]
        shown = []
        for w in self.root.query_tree().children:  # bottom to top
            try:
                if w.get_attributes().map_state == X.IsViewable and self.title(w):
                    shown.append(w)
            except XError:
                continue  # it went away while we looked
        return False, shown

    def title(self, w: Any) -> str:
        """``_NET_WM_NAME`` (UTF-8), else ``WM_NAME``, as ``wmctrl`` reads a title."""
        net = w.get_full_property(self.atom("_NET_WM_NAME"), self.atom("UTF8_STRING"))
        if net is not None and net.value:
            value = net.value
            return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        name = w.get_wm_name()
        if isinstance(name, bytes):
            return name.decode("latin-1")
        return name or ""

    def wm_class(self, w: Any) -> str:
        """``WM_CLASS`` as ``wmctrl -x`` matches it: ``instance.class``."""
        cls = w.get_wm_class()
        return ".".join(cls) if cls else ""

    def describe(self, w: Any, managed: bool) -> dict[str, Any]:
        return {
            "window": f"{w.id:#x}",
            "title": self.title(w),
            "class": self.wm_class(w),
            "window_manager": managed,
        }

    def find(self, name: str, strict: bool, by_class: bool) -> tuple[bool, Any | None]:
        """The first window whose title (class with ``by_class``) contains ``name``
        ignoring case, or equals it with ``strict``: ``wmctrl``'s ``-a``/``-c`` match."""
        managed, windows = self.windows()
        wanted = name.casefold()
        for w in windows:
            try:
                text = self.wm_class(w) if by_class else self.title(w)
            except XError:
                continue
            if (strict and text == name) or (not strict and wanted in text.casefold()):
                return managed, w
        return managed, None

    def message(self, target: Any, window: Any, kind: str, data: list[int], mask: int) -> None:
        msg = event.ClientMessage(
            window=window, client_type=self.atom(kind), data=(32, [*data, 0, 0, 0, 0, 0][:5])
        )
        target.send_event(msg, event_mask=mask)

    def activate(self, w: Any, managed: bool) -> dict[str, Any]:
        """Bring ``w`` to the front with the input focus."""
        if managed:
            self.message(self.root, w, "_NET_ACTIVE_WINDOW", [_FROM_A_PAGER], _TO_THE_MANAGER)
            w.map()
            w.configure(stack_mode=X.Above)
            self.x.sync()
            return {}
        w.configure(stack_mode=X.Above)
        w.set_input_focus(X.RevertToParent, X.CurrentTime)
        self.x.sync()
        return {"focused": self.x.get_input_focus().focus.id == w.id}

    def close(self, w: Any, managed: bool) -> str:
        """Ask ``w`` to close; how it was asked."""
        if managed:
            self.message(
                self.root, w, "_NET_CLOSE_WINDOW", [X.CurrentTime, _FROM_A_PAGER], _TO_THE_MANAGER
            )
            how = "_NET_CLOSE_WINDOW"
        elif self.atom("WM_DELETE_WINDOW") in (w.get_wm_protocols() or []):
            self.message(w, w, "WM_PROTOCOLS", [self.atom("WM_DELETE_WINDOW"), X.CurrentTime], 0)
            how = "WM_DELETE_WINDOW"
        else:
            self.x.kill_client(w.id)
            how = "KillClient"
        self.x.sync()
        return how


def resolve(path: str) -> dict[str, Any]:
    """What OSWorld's ``open_file`` makes of ``path``: an existing file (``~`` and
    ``$VARS`` expanded, relative to the working folder), else a program on PATH."""
    expanded = os.path.expandvars(os.path.expanduser(path))
    if os.path.exists(expanded):
        return {"path": os.path.abspath(expanded), "kind": "file"}
    if shutil.which(path):
        return {"path": path, "kind": "program"}
    return {"path": expanded, "kind": "missing"}


def find_and_act(args: dict[str, Any], close: bool) -> dict[str, Any]:
    desktop = Desktop()
    managed, w = desktop.find(str(args["name"]), bool(args["strict"]), bool(args["by_class"]))
    if w is None:
        return {"window": None, "window_manager": managed}
    found = desktop.describe(w, managed)
    if close:
        return {**found, "how": desktop.close(w, managed)}
    return {**found, **desktop.activate(w, managed)}


def wait(args: dict[str, Any]) -> dict[str, Any]:
    """Look for a window whose title contains one of ``titles`` until ``timeout`` passes;
    activate the first found, as OSWorld's ``open_file`` does."""
    titles = [t for t in args["titles"] if t]
    desktop = Desktop()
    started = time.monotonic()
    while True:
        managed, windows = desktop.windows()
        for w in windows:
            try:
                title = desktop.title(w)
            except XError:
                continue
            if any(t in title for t in titles):
                found = desktop.describe(w, managed)
                activated = desktop.activate(w, managed)
                return {**found, **activated, "waited_s": round(time.monotonic() - started, 3)}
        if time.monotonic() - started >= float(args["timeout"]):
            seen = []
            for w in windows:
                try:
                    seen.append(desktop.title(w))
                except XError:
                    continue
            return {"window": None, "waited_s": round(time.monotonic() - started, 3), "seen": seen}
        time.sleep(POLL_S)


def main(argv: list[str]) -> int:
    op, args = argv[0], json.loads(argv[1])
    if op == "resolve":
        answer = resolve(str(args["path"]))
    elif op in ("activate", "close"):
        answer = find_and_act(args, close=op == "close")
    elif op == "wait":
        answer = wait(args)
    else:
        print(f"unknown operation {op!r}", file=sys.stderr)
        return 2
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
