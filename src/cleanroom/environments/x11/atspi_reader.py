"""AT-SPI reader: a long-lived helper run by the system Python, one per environment.

It is started as the environment's user, with the environment's D-Bus session, so it
sees only that environment's accessibility bus. It reads one JSON request per line on
stdin and answers one JSON line on stdout:

    {"op": "focused"}  -> {"ok": true, "app": ..., "role": ..., "name": ...,
                           "text": ..., "document_text": ...}
    {"op": "texts"}    -> {"ok": true, "items": [{"app", "pid", "window", "window_role",
                                                   "role", "name", "text"}, ...]}
    {"op": "has_paragraph"} -> {"ok": true, "found": bool}  (stops at the first one)
    {"op": "tree"}     -> {"ok": true, "xml": "<desktop-frame ...>", "truncated": bool,
                           "cut": [...], "nodes": int}
    {"op": "ping"}     -> {"ok": true}

``pid`` is the process that published the item's application; ``window`` and
``window_role`` name the top-level window (frame, dialog, file chooser) it sits in.
``tree`` is the whole bus in OSWorld's accessibility-tree XML (see `tree`); ``cut`` names
the bounds that left something out (nodes, size, time, depth, width, text, value), and
``truncated`` says whether there is any.

Errors are answered as {"ok": false, "error": "..."}; the reader keeps going.
This file is executed by /usr/bin/python3 (where the distribution's GObject bindings
live), never imported by the package.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
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


# -- the accessibility tree in OSWorld's format ------------------------------------------
#
# OSWorld's VM server answers GET /accessibility with {"AT": xml}, which its DesktopEnv
# hands to agents as obs["accessibility_tree"]. On Linux it builds the XML from AT-SPI
# (`_create_atspi_node` and `get_accessibility_tree` in desktop_env/server/main.py of the
# xlang-ai/OSWorld repository). Agents written for OSWorld parse that XML, so this one
# follows its format and its semantics:
#
#   * the root is <desktop-frame>, declaring the namespaces in `TREE_NAMESPACES`; each
#     application on the bus is a child of it; every accessible object is an element named
#     after its role, spaces turned into "-" ("document text" -> <document-text>), an
#     empty role being "unknown";
#   * ``name`` is the accessible name; each state the object has is st:<state>="true",
#     the state named as pyatspi spells it in lower case (showing, multi_line); each object
#     attribute is attr:<name>; an object both visible and showing has cp:screencoord="(x, y)"
#     and cp:size="(w, h)" in screen coordinates; one with the Image or Selection interface
#     has image="true" or selection="true"; one with a Value has val:value, val:min, val:max
#     and val:step; each action is act:<name>_desc and act:<name>_kb (spaces in the action's
#     name turned into "-");
#   * an object's text is the element's text, without U+FFFC and U+FFFD;
#   * applications sit at depth 1; an object at depth 50 is given no children; at most the
#     first 1024 children of an object are read; below a spreadsheet document, a table
#     gives only its showing cells, row by row (OSWorld's walk of a Calc sheet).
#
# What differs is bounds only, since the bus is the agent's to fill: a cap on nodes, on
# the XML's size and on time, on one object's text and on each name and attribute value;
# strings lose the characters XML 1.0 forbids; an object that fails to answer is left
# out on its own, instead of ending the walk of its siblings. Applications come in the
# bus's order (OSWorld reads them at once and keeps the order they finish in).

TREE_NAMESPACES = (
    ("st", "https://accessibility.ubuntu.example.org/ns/state"),
    ("attr", "https://accessibility.ubuntu.example.org/ns/attributes"),
    ("cp", "https://accessibility.ubuntu.example.org/ns/component"),
    ("doc", "https://accessibility.ubuntu.example.org/ns/document"),
    ("docattr", "https://accessibility.ubuntu.example.org/ns/document/attributes"),
    ("txt", "https://accessibility.ubuntu.example.org/ns/text"),
    ("val", "https://accessibility.ubuntu.example.org/ns/value"),
    ("act", "https://accessibility.ubuntu.example.org/ns/action"),
)
TREE_MAX_DEPTH = 50  # OSWorld's MAX_DEPTH
TREE_MAX_WIDTH = 1024  # OSWorld's MAX_WIDTH
TREE_MAX_NODES = 20_000
TREE_MAX_BYTES = 6_000_000  # of the XML in UTF-8, checked before each node
TREE_MAX_TEXT = 20_000  # characters of one object's text
TREE_MAX_VALUE = 2_000  # characters of a name or of one attribute's value
TREE_MAX_ATTRIBUTES = 64  # object attributes, and actions, kept per object
TREE_TIME_S = 15.0
# OSWorld's walk of a spreadsheet table: how far it looks for the first showing cell, and
# the largest sheet (LibreOffice's rows and, before 7.4, columns; the columns come from
# the table when it says).
_SHEET_SCAN = 500
_SHEET_ROWS = 1_048_576
_SHEET_COLUMNS = 16_384

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_XML_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
_STATE_PREFIX = "ATSPI_STATE_"


class _Tree:
    """The XML being written, and what has been spent of its bounds."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.nodes = 0
        self.cut: set[str] = set()
        self.deadline = time.monotonic() + TREE_TIME_S

    def add(self, piece: str) -> None:
        self.parts.append(piece)
        self.size += len(piece.encode("utf-8", "replace"))

    def room(self) -> bool:
        """Whether one more node may be read; records the bound that says no."""
        if self.nodes >= TREE_MAX_NODES:
            self.cut.add("nodes")
        elif self.size >= TREE_MAX_BYTES:
            self.cut.add("size")
        elif time.monotonic() >= self.deadline:
            self.cut.add("time")
        else:
            return True
        return False

    def string(self, value: Any, cap: int = TREE_MAX_VALUE, why: str = "value") -> str:
        """A string fit for XML, cut at ``cap`` characters (noted as ``why``)."""
        text = "" if value is None else str(value)
        if len(text) > cap:
            text = text[:cap]
            self.cut.add(why)
        return _NOT_XML.sub("", text)


def _escape_attribute(value: str) -> str:
    return (
        value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\t", "&#9;")
        .replace("\n", "&#10;")
        .replace("\r", "&#13;")
    )


def _escape_text(value: str) -> str:
    return (
        value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")
    )


def _tag(raw_role: str) -> str:
    tag = (raw_role or "unknown").replace(" ", "-")
    return tag if _XML_NAME.match(tag) else "unknown"


def _node_attributes(
    obj: Any, name: str, interfaces: set[str], tree: _Tree
) -> list[tuple[str, str]]:
    """OSWorld's attributes of one object, in its order: name, states, object attributes,
    extents, image, selection, value, actions. A part that fails is left out."""
    out: list[tuple[str, str]] = [("name", tree.string(name))]
    states: set[str] = set()
    with contextlib.suppress(Exception):
        for state in obj.get_state_set().get_states():
            name = state.value_name.removeprefix(_STATE_PREFIX).lower()
            if name and _XML_NAME.match(name):
                states.add(name)
                out.append((f"st:{name}", "true"))
    with contextlib.suppress(Exception):
        attributes = obj.get_attributes() or {}
        for key, value in list(attributes.items())[:TREE_MAX_ATTRIBUTES]:
            if key and _XML_NAME.match(key):
                out.append((f"attr:{key}", tree.string(value)))
        if len(attributes) > TREE_MAX_ATTRIBUTES:
            tree.cut.add("value")
    if {"visible", "showing"} <= states and "Component" in interfaces:
        with contextlib.suppress(Exception):
            box = Atspi.Component.get_extents(obj, Atspi.CoordType.SCREEN)
            out.append(("cp:screencoord", f"({box.x}, {box.y})"))
            out.append(("cp:size", f"({box.width}, {box.height})"))
    if "Image" in interfaces:
        out.append(("image", "true"))
    if "Selection" in interfaces:
        out.append(("selection", "true"))
    if "Value" in interfaces:
        for key, read in (
            ("value", Atspi.Value.get_current_value),
            ("min", Atspi.Value.get_minimum_value),
            ("max", Atspi.Value.get_maximum_value),
            ("step", Atspi.Value.get_minimum_increment),
        ):
            with contextlib.suppress(Exception):
                out.append((f"val:{key}", str(float(read(obj)))))
    if "Action" in interfaces:
        with contextlib.suppress(Exception):
            n = Atspi.Action.get_n_actions(obj)
            if n > TREE_MAX_ATTRIBUTES:
                tree.cut.add("value")
            for i in range(min(n, TREE_MAX_ATTRIBUTES)):
                name = tree.string(Atspi.Action.get_action_name(obj, i)).replace(" ", "-")
                if not _XML_NAME.match(name):
                    continue
                desc = tree.string(Atspi.Action.get_action_description(obj, i))
                key = tree.string(Atspi.Action.get_key_binding(obj, i))
                out.append((f"act:{name}_desc", desc))
                out.append((f"act:{name}_kb", key))
    # A name read twice (two actions of one name) keeps its last value, as a dict would.
    return list(dict(out).items())


def _node_text(obj: Any, tree: _Tree) -> str:
    """The object's text, at most `TREE_MAX_TEXT` characters of it."""
    try:
        n = Atspi.Text.get_character_count(obj)
        if n > TREE_MAX_TEXT:
            tree.cut.add("text")
        text = Atspi.Text.get_text(obj, 0, min(n, TREE_MAX_TEXT)) or ""
    except Exception:
        return ""
    return tree.string(text.replace("\ufffc", "").replace("\ufffd", ""), TREE_MAX_TEXT, "text")


def _child_at(obj: Any, index: int) -> Any:
    try:
        return obj.get_child_at_index(index)
    except Exception:
        return None


def _tree_node(obj: Any, depth: int, in_sheet: bool, tree: _Tree) -> None:
    """Write one object and what is under it."""
    if not tree.room():
        return
    try:
        raw_role = (obj.get_role_name() or "").strip()
        name = obj.get_name()
        interfaces = set(obj.get_interfaces() or ())
    except Exception:
        return  # gone, or not answering: left out
    tree.nodes += 1
    tag = _tag(raw_role)
    attributes = _node_attributes(obj, name, interfaces, tree)
    text = _node_text(obj, tree) if "Text" in interfaces else ""
    in_sheet = in_sheet or raw_role == "document spreadsheet"
    tree.add(f"<{tag}" + "".join(f' {k}="{_escape_attribute(v)}"' for k, v in attributes))
    mark = len(tree.parts)
    tree.add(">" + _escape_text(text))
    try:
        count = obj.get_child_count()
    except Exception:
        count = 0
    if count > 0 and depth >= TREE_MAX_DEPTH:
        tree.cut.add("depth")
    elif in_sheet and tag == "table":
        _sheet_cells(obj, depth, tree)
    else:
        if count > TREE_MAX_WIDTH:
            tree.cut.add("width")
        for i in range(min(count, TREE_MAX_WIDTH)):
            if not tree.room():
                break
            child = _child_at(obj, i)
            if child is not None:
                _tree_node(child, depth + 1, in_sheet, tree)
    if len(tree.parts) == mark + 1 and not text:
        tree.parts[mark] = "/>"
    else:
        tree.add(f"</{tag}>")


def _showing(obj: Any) -> bool:
    states = _states(obj)
    return states is not None and states.contains(_S.SHOWING)


def _sheet_cells(table: Any, depth: int, tree: _Tree) -> None:
    """A spreadsheet table's showing cells, as OSWorld walks them: cell (row, column) is
    child row * columns + column; the first row with a showing cell sets the first column;
    each row is read from there to its first cell not showing; the walk ends at a row whose
    first column is not showing (or after 500 rows and columns without any showing cell)."""
    try:
        columns = int(Atspi.Table.get_n_columns(table))
    except Exception:
        columns = 0
    if columns <= 0:
        columns = _SHEET_COLUMNS
    first: int | None = None
    row_start = 0
    for row in range(_SHEET_ROWS):
        last = first or 0
        for column in range(first or 0, columns):
            last = column
            if not tree.room():
                return
            cell = _child_at(table, row_start + column)
            if cell is not None and _showing(cell):
                if first is None:
                    first = column
                _tree_node(cell, depth + 1, True, tree)
            elif first is not None or column >= _SHEET_SCAN:
                break
        if (first is not None and last == first) or (first is None and row >= _SHEET_SCAN):
            return
        row_start += columns


def tree() -> dict[str, Any]:
    t = _Tree()
    t.add("<desktop-frame" + "".join(f' xmlns:{p}="{uri}"' for p, uri in TREE_NAMESPACES))
    mark = len(t.parts)
    t.add(">")
    desktop = Atspi.get_desktop(0)
    count = desktop.get_child_count()
    if count > TREE_MAX_WIDTH:
        t.cut.add("width")
    for i in range(min(count, TREE_MAX_WIDTH)):
        if not t.room():
            break
        app = _child_at(desktop, i)
        if app is None:
            continue
        with contextlib.suppress(Exception):
            app.clear_cache()
        _tree_node(app, 1, False, t)
    if len(t.parts) == mark + 1:
        t.parts[mark] = "/>"
    else:
        t.add("</desktop-frame>")
    return {
        "ok": True,
        "xml": "".join(t.parts),
        "truncated": bool(t.cut),
        "cut": sorted(t.cut),
        "nodes": t.nodes,
    }


def main() -> None:
    handlers: dict[str, Any] = {
        "focused": focused,
        "texts": texts,
        "has_paragraph": has_paragraph,
        "tree": tree,
        "ping": lambda: {"ok": True},
    }
    for line in sys.stdin:
        try:
            request = json.loads(line)
            handler = handlers[request["op"]]
            answer = handler()
        except Exception as exc:
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        # UTF-8 as it is (not \u escapes), so a tree's size bound holds for its answer.
        out = json.dumps(answer, ensure_ascii=False) + "\n"
        sys.stdout.buffer.write(out.encode("utf-8", "replace"))
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
