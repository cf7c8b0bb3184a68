"""AT-SPI reader: a long-lived helper run by the system Python, one per environment.

It is started as the environment's user, with the environment's D-Bus session, so it
sees only that environment's accessibility bus. It reads one JSON request per line on
stdin and answers one JSON line on stdout:

    {"op": "focused"}  -> {"ok": true, "app": ..., "role": ..., "name": ...,
                           "text": ..., "document_text": ...}
    {"op": "texts"}    -> {"ok": true, "items": [{"app", "pid", "window", "window_role",
                                                   "role", "name", "text"}, ...]}
    {"op": "has_paragraph"} -> {"ok": true, "found": bool}  (stops at the first one)
    {"op": "ping"}     -> {"ok": true}

``pid`` is the process that published the item's application; ``window`` and
``window_role`` name the top-level window (frame, dialog, file chooser) it sits in.

Errors are answered as {"ok": false, "error": "..."}; the reader keeps going.
This file is executed by /usr/bin/python3 (where the distribution's GObject bindings
live), never imported by the package.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402

_S = Atspi.StateType
_R = Atspi.Role
# Menus and toolbars hold hundreds of nodes and never hold typed text.
_PRUNE = {_R.MENU_BAR, _R.TOOL_BAR, _R.MENU, _R.POPUP_MENU, _R.STATUS_BAR}
_MAX_CHILDREN = 400
_MAX_DEPTH = 40
_TEXT_ROLES = {_R.TEXT, _R.ENTRY, _R.PARAGRAPH, _R.PASSWORD_TEXT, _R.TERMINAL, _R.HEADING}


def _text(obj: Any) -> str | None:
    try:
        n = Atspi.Text.get_character_count(obj)
        return Atspi.Text.get_text(obj, 0, n)
    except Exception:
        return None


def _children(obj: Any) -> list[Any]:
    try:
        n = min(obj.get_child_count(), _MAX_CHILDREN)
    except Exception:
        return []
    out = []
    for i in range(n):
        try:
            child = obj.get_child_at_index(i)
        except Exception:
            continue
        if child is not None:
            out.append(child)
    return out


def _states(obj: Any) -> Any:
    try:
        return obj.get_state_set()
    except Exception:
        return None


def _deepest_focused(obj: Any, depth: int = 0) -> Any:
    """The deepest showing node with the FOCUSED state under obj, or None."""
    if depth > _MAX_DEPTH:
        return None
    try:
        role = obj.get_role()
    except Exception:
        return None
    if role in _PRUNE:
        return None
    states = _states(obj)
    if states is None:
        return None
    if depth > 1 and not states.contains(_S.SHOWING):
        return None
    for child in _children(obj):
        found = _deepest_focused(child, depth + 1)
        if found is not None:
            return found
    return obj if states.contains(_S.FOCUSED) else None


def _document_text(obj: Any) -> str | None:
    """For a paragraph inside a document, the text of the whole document."""
    try:
        parent = obj.get_parent()
        if parent is None or parent.get_role() not in (_R.DOCUMENT_TEXT, _R.DOCUMENT_FRAME):
            return None
        parts = [_text(p) or "" for p in _children(parent)]
        return "\n".join(parts)
    except Exception:
        return None


def _apps() -> list[Any]:
    desktop = Atspi.get_desktop(0)
    apps = _children(desktop)
    for app in apps:
        with contextlib.suppress(Exception):
            app.clear_cache()
    return apps


def focused() -> dict[str, Any]:
    for app in _apps():
        found = _deepest_focused(app)
        if found is None:
            continue
        return {
            "ok": True,
            "app": app.get_name(),
            "role": found.get_role_name(),
            "name": found.get_name(),
            "text": _text(found),
            "document_text": _document_text(found),
        }
    return {
        "ok": True,
        "app": None,
        "role": None,
        "name": None,
        "text": None,
        "document_text": None,
    }


def _collect(obj: Any, app: dict[str, Any], items: list[dict[str, Any]], depth: int = 0) -> None:
    if depth > _MAX_DEPTH:
        return
    try:
        role = obj.get_role()
    except Exception:
        return
    if role in _PRUNE:
        return
    states = _states(obj)
    if states is None or (depth > 1 and not states.contains(_S.SHOWING)):
        return
    if depth == 1:  # a child of the application is one of its top-level windows
        app = {**app, "window": obj.get_name(), "window_role": obj.get_role_name()}
    if role in _TEXT_ROLES:
        items.append(
            {**app, "role": obj.get_role_name(), "name": obj.get_name(), "text": _text(obj)}
        )
    for child in _children(obj):
        _collect(child, app, items, depth + 1)


def _pid(app: Any) -> int | None:
    try:
        return int(app.get_process_id())
    except Exception:
        return None


def _find_paragraph(obj: Any, depth: int = 0) -> bool:
    """Whether a showing paragraph sits under obj; stops at the first one."""
    if depth > _MAX_DEPTH:
        return False
    try:
        role = obj.get_role()
    except Exception:
        return False
    if role in _PRUNE:
        return False
    states = _states(obj)
    if states is None or (depth > 1 and not states.contains(_S.SHOWING)):
        return False
    if role == _R.PARAGRAPH:
        return True
    return any(_find_paragraph(child, depth + 1) for child in _children(obj))


def has_paragraph() -> dict[str, Any]:
    return {"ok": True, "found": any(_find_paragraph(app) for app in _apps())}


def texts() -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for app in _apps():
        about = {"app": app.get_name(), "pid": _pid(app), "window": None, "window_role": None}
        _collect(app, about, items)
    return {"ok": True, "items": items}


def main() -> None:
    handlers: dict[str, Any] = {
        "focused": focused,
        "texts": texts,
        "has_paragraph": has_paragraph,
        "ping": lambda: {"ok": True},
    }
    for line in sys.stdin:
        try:
            request = json.loads(line)
            handler = handlers[request["op"]]
            answer = handler()
        except Exception as exc:
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
