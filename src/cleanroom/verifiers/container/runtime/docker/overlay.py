"""A container's filesystem diff read straight from its overlay2 writable layer.

``docker diff`` gives the same list but costs about half a second on a small container,
most of the sealed mode's time budget. On the daemon's own host the writable layer is a
plain folder (the ``UpperDir`` the daemon reports): every entry in it was added or
changed by the container, and a character device 0:0 is a deletion (an overlayfs
whiteout). Walking it takes milliseconds. When the folder cannot be read (another
storage driver, a remote daemon, no permission) the caller falls back to the API.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from typing import Any

from cleanroom.verifiers.container.decision.tamper import Change, ChangeKind, Diff

# A container that wrote this many entries is read through the API instead: the walk's
# speed is the only reason it exists.
MAX_ENTRIES = 200_000
# Folders nested deeper than this are listed as one entry, not walked into: a tree deeper
# than PATH_MAX is the agent's to make, and must cost the walk nothing but a note.
MAX_DEPTH = 256


class OverlayUnreadable(Exception):
    """The writable layer cannot be read from this host; use ``docker diff`` instead."""


def changes_from_graph_driver(graph_driver: Mapping[str, Any]) -> Diff:
    """The changes in a container's writable layer, from its inspect ``GraphDriver``."""
    if graph_driver.get("Name") != "overlay2":
        raise OverlayUnreadable(f"storage driver is {graph_driver.get('Name')!r}, not overlay2")
    data = graph_driver.get("Data") or {}
    upper = data.get("UpperDir")
    lowers = [d for d in str(data.get("LowerDir") or "").split(":") if d]
    if not upper or not os.access(upper, os.R_OK | os.X_OK):
        raise OverlayUnreadable(f"writable layer {upper!r} is not readable from this host")
    return walk_layer(upper, lowers)


def walk_layer(upper: str, lowers: list[str]) -> Diff:
    """Walk ``upper`` by descriptors, never by path, so no name length or depth breaks it.

    Each folder is opened relative to its parent's descriptor with ``O_NOFOLLOW``; the
    walk holds one descriptor per level and stops descending at `MAX_DEPTH`.
    """
    try:
        root = os.open(upper, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise OverlayUnreadable(f"cannot open {upper}: {exc}") from exc
    lower_fds = [fd for fd in (_open_dir(lower) for lower in lowers) if fd is not None]
    changes: list[Change] = []
    notes: list[str] = []
    stack: list[tuple[int, str, Iterator[os.DirEntry[str]]]] = []
    try:
        stack.append((root, "", _entries(root)))
        while stack:
            fd, rel, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                os.close(fd)
                continue
            if len(changes) >= MAX_ENTRIES:
                raise OverlayUnreadable(f"more than {MAX_ENTRIES} changed entries")
            path = f"{rel}/{entry.name}"
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
                changes.append(Change(path, ChangeKind.DELETED))
                continue
            in_lower = any(_exists_below(lfd, path) for lfd in lower_fds)
            kind = ChangeKind.MODIFIED if in_lower else ChangeKind.ADDED
            size = info.st_size if stat.S_ISREG(info.st_mode) else 0
            changes.append(Change(path, kind, size))
            if not stat.S_ISDIR(info.st_mode):
                continue
            if len(stack) > MAX_DEPTH:
                notes.append(f"{path[:200]}...: deeper than {MAX_DEPTH} folders, not walked")
                continue
            try:
                child = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                notes.append(f"{path[:200]}: not listed ({exc.strerror})")
                continue
            stack.append((child, path, _entries(child)))
    finally:
        for fd, _, _ in stack:
            os.close(fd)
        for lfd in lower_fds:
            os.close(lfd)
    return Diff(changes, "overlay", "; ".join(notes[:5]))


def _entries(fd: int) -> Iterator[os.DirEntry[str]]:
    try:
        return iter(list(os.scandir(fd)))
    except OSError:
        return iter(())


def _open_dir(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None


def _exists_below(dir_fd: int, path: str) -> bool:
    """Whether ``path`` (relative, ``/a/b``) exists under ``dir_fd``, links not followed.

    Resolved one component at a time so that no path is ever longer than one name.
    """
    parts = [p for p in path.split("/") if p]
    fd = dir_fd
    try:
        for i, part in enumerate(parts):
            if i == len(parts) - 1:
                os.stat(part, dir_fd=fd, follow_symlinks=False)
                return True
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            if fd != dir_fd:
                os.close(fd)
            fd = nxt
        return False
    except OSError:
        return False
    finally:
        if fd != dir_fd:
            os.close(fd)
