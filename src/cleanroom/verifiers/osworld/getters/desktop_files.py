"""OSWorld's getters of the user's folders: a directory tree, the desktop's shortcuts and
the wallpaper file.

OSWorld's VM server builds these with ``os.listdir`` and ``gsettings``; here the guest
lists a folder with one ``find`` (no link followed: a link is a file entry) and the
wallpaper's path comes from the same ``gsettings`` call.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from cleanroom.verifiers.osworld.cached_file import CachedFile
from cleanroom.verifiers.osworld.getters.core import (
    GetterContext,
    GetterFailed,
    UnreadableResult,
    cache_write,
    run_command,
)

_NOT_A_FOLDER = 3
# The start and everything under it, pre-order, in the order the folder gives its entries
# (os.listdir's order): "d" folder, "e" a folder that cannot be read, other letters no
# folder; each with its path below the start, NUL-terminated.
_LIST = (
    '[ -d "$1" ] && [ ! -L "$1" ] || exit 3; '
    'exec find "$1" \\( -type d ! -readable -printf "e\\t%P\\0" -prune \\) '
    '-o -printf "%y\\t%P\\0"'
)


@dataclass(frozen=True)
class Entry:
    """One line of the listing: its kind letter and its path below the start."""

    kind: str
    path: str


def parse_listing(output: bytes) -> list[Entry]:
    """The entries of ``find``'s NUL-terminated output (names as ``os.listdir`` gives
    them: undecodable bytes kept as surrogates)."""
    entries = []
    for record in output.split(b"\0")[:-1]:
        kind, _, path = record.partition(b"\t")
        entries.append(Entry(kind.decode(), path.decode("utf-8", "surrogateescape")))
    return entries


def build_tree(root: str, start_name: str, entries: list[Entry]) -> dict[str, Any]:
    """OSWorld's ``{"type", "name", "children"}`` tree of a listing of ``root``.

    A folder that cannot be read is ``{"error": ...}`` with the message Python gives.
    """
    nodes: dict[str, dict[str, Any]] = {}
    tree: dict[str, Any] = {}
    for entry in entries:
        full = posixpath.join(root, entry.path) if entry.path else root
        name = posixpath.basename(entry.path) if entry.path else start_name
        if entry.kind == "d":
            node: dict[str, Any] = {"type": "directory", "name": name, "children": []}
        elif entry.kind == "e":
            node = {"error": f"[Errno 13] Permission denied: {full!r}"}
        else:
            node = {"type": "file", "name": name}
        if not entry.path:
            tree = node
        else:
            nodes[posixpath.dirname(entry.path)]["children"].append(node)
        if entry.kind == "d":
            nodes[entry.path] = node
    return tree


def directory_tree(ctx: GetterContext, path: str) -> dict[str, Any]:
    """The tree of the guest folder ``path`` (relative to the home, ``~`` not expanded,
    as OSWorld's server takes it); `FileNotFoundError` when it is no folder."""
    root = posixpath.normpath(posixpath.join(ctx.guest.home, path))
    result = run_command(ctx, {"command": ["sh", "-c", _LIST, "sh", root]})
    if result.exit_code == _NOT_A_FOLDER:
        raise FileNotFoundError(f"{path} is no folder")
    return build_tree(root, posixpath.basename(path), parse_listing(result.stdout))


def get_list_directory(ctx: GetterContext, config: dict[str, Any]) -> dict[str, Any]:
    """The tree of the folder ``path``; a missing folder raises `FileNotFoundError`
    (OSWorld gives None, on which its metric crashes)."""
    path = config.get("path")
    if not isinstance(path, str):
        raise GetterFailed("list_directory needs a 'path'")
    return directory_tree(ctx, path)


def get_shortcuts_on_desktop(ctx: GetterContext, config: dict[str, Any]) -> dict[str, str]:
    """Every ``*.desktop`` entry of ``~/Desktop``, name to text.

    OSWorld crashes where one cannot be read as UTF-8 text (or ``~/Desktop`` is no
    folder); what the agent left scores 0 here (`FileNotFoundError`).
    """
    desktop = posixpath.join(ctx.guest.home, "Desktop")
    tree = directory_tree(ctx, desktop)
    if "children" not in tree:
        raise UnreadableResult(f"{desktop} cannot be listed")
    shortcuts: dict[str, str] = {}
    for child in tree["children"]:
        name = child.get("name", "")
        if not name.endswith(".desktop"):
            continue
        try:
            shortcuts[name] = ctx.guest.read_file(posixpath.join(desktop, name)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnreadableResult(f"~/Desktop/{name} is not UTF-8 text") from exc
    return shortcuts


def wallpaper_path(gsettings_output: str) -> str:
    """The file of ``gsettings get org.gnome.desktop.background picture-uri``'s answer,
    as OSWorld's server makes it (``file://`` and quotes dropped, nothing unescaped)."""
    return gsettings_output.strip().replace("file://", "").replace("'", "")


def get_vm_wallpaper(ctx: GetterContext, config: dict[str, Any]) -> CachedFile:
    """The wallpaper picture, copied to ``dest``.

    A wallpaper file that cannot be read is the agent's 0 here (`FileNotFoundError`),
    where OSWorld hands its metric an empty file; a ``gsettings`` that fails is a getter
    failure (OSWorld gives the same empty file).
    """
    dest = config.get("dest")
    if not isinstance(dest, str):
        raise GetterFailed("vm_wallpaper needs a 'dest'")
    command = ["gsettings", "get", "org.gnome.desktop.background", "picture-uri"]
    result = run_command(ctx, {"command": command})
    if result.exit_code != 0:
        raise GetterFailed(f"gsettings could not read the wallpaper (exit {result.exit_code})")
    try:
        path = wallpaper_path(result.stdout.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UnreadableResult("the wallpaper's path is not UTF-8") from exc
    if not path:
        raise FileNotFoundError("no wallpaper is set")
    return cache_write(ctx, dest, ctx.guest.read_file(path))
