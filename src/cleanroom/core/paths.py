"""Absolute POSIX paths compared as text, the way a container's paths are named."""

from __future__ import annotations

from collections.abc import Iterable


def under(path: str, tree: str) -> bool:
    """Whether ``path`` is ``tree`` or inside it (``/`` holds every path)."""
    if tree == "/":
        return True
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def under_any(path: str, trees: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``trees`` or inside one."""
    return any(under(path, tree) for tree in trees)
