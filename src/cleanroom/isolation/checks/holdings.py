"""What an environment holds: its trees (home, program profiles, logs) and its clipboard.

The isolation tests that look for a token where it should not be search these places
with the token scanner. The places come from what the environment really uses: its
account's home, and the profile folders its running programs were started with, so a
profile or home borrowed from another environment is searched where it really is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from cleanroom.core.tokens import TokenHit, scan_text
from cleanroom.environments.errors import PoolError, SelectionUnanswered
from cleanroom.environments.interface import SELECTIONS, Desktops
from cleanroom.tree_scan import scan_tree


class PlaceUnreadable(PoolError):
    """A tree or clipboard of an environment could not be read, so a search is incomplete."""


@dataclass
class Holdings:
    """The tokens found in one environment's places, and where the search looked.

    ``unanswered`` names the selections a program of the environment holds and never
    answers for: the environment's own act (the token sweep scores it), not a place the
    search could not read."""

    env: str
    hits: list[TokenHit] = field(default_factory=list)
    searched: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)


def trees_of(pool: Desktops, env: str, *, logs: bool = True) -> list[Path]:
    """Every folder that belongs to ``env``: its home, its programs' profiles and (with
    ``logs``) its log folder in the run folder; absolute (never resolved through a link the
    environment left) and without repeats."""
    places = pool.places(env)
    trees = [places.home, *places.profiles]
    if logs:
        trees.append(places.log_dir)
    unique: list[Path] = []
    for t in trees:
        r = Path(os.path.abspath(t))  # lexically: a link of the environment's is not followed
        if not any(r == u or r.is_relative_to(u) for u in unique):
            unique = [u for u in unique if not u.is_relative_to(r)] + [r]
    return unique


# The longest one folder's scan may take: past it, the place is unreadable (never a hang).
SCAN_DEADLINE_S = 60.0


def scan_trees(trees: list[Path]) -> list[TokenHit]:
    """Every token in the trees; raise `PlaceUnreadable` if one is missing, or holds a
    folder that cannot be listed or a file that exists but cannot be read. Entries that
    vanish during the walk are not errors: running programs replace their temporary files
    all the time, and what vanished holds no token any more."""
    hits: list[TokenHit] = []
    for tree in trees:
        scan = scan_tree(tree, deadline_s=SCAN_DEADLINE_S)
        hits.extend(scan.hits)
        blind = scan.blind_spots
        if blind:
            raise PlaceUnreadable(f"unreadable under {tree}: {'; '.join(map(str, blind[:3]))}")
    return hits


def clipboard_hits(pool: Desktops, env: str, unanswered: list[str] | None = None) -> list[TokenHit]:
    """Every token in the environment's CLIPBOARD and PRIMARY selections. A selection
    whose owner, a program of the environment's, never answers is added to
    ``unanswered`` (with None, it raises like any other unreadable selection)."""
    hits: list[TokenHit] = []
    for selection in SELECTIONS:
        try:
            text = pool.read_selection(env, selection).text  # ClipboardUnreadable: a PoolError
        except SelectionUnanswered:
            if unanswered is None:
                raise
            unanswered.append(f"{env}:{selection}")
            continue
        if text:
            hits.extend(scan_text(text, f"{env}:{selection}"))
    return hits


def holdings(pool: Desktops, env: str, *, logs: bool = True, clipboard: bool = True) -> Holdings:
    """Search everything ``env`` holds; raise `PoolError` if any of it cannot be read."""
    found = Holdings(env)
    if clipboard:
        found.hits.extend(clipboard_hits(pool, env, found.unanswered))
        found.searched.extend(
            f"{env}:{s}" for s in SELECTIONS if f"{env}:{s}" not in found.unanswered
        )
    trees = trees_of(pool, env, logs=logs)
    found.hits.extend(scan_trees(trees))
    found.searched.extend(str(t) for t in trees)
    return found
