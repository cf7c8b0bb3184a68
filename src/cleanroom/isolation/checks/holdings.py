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
from cleanroom.environments.errors import PoolError
from cleanroom.environments.interface import SELECTIONS
from cleanroom.environments.pool.pool import Pool
from cleanroom.tree_scan import scan_tree

_PROFILE_FLAGS = ("-env:UserInstallation=file://", "--user-data-dir=")


class PlaceUnreadable(PoolError):
    """A tree or clipboard of an environment could not be read, so a search is incomplete."""


@dataclass
class Holdings:
    """The tokens found in one environment's places, and where the search looked."""

    env: str
    hits: list[TokenHit] = field(default_factory=list)
    searched: list[str] = field(default_factory=list)


def profile_dirs(pool: Pool, env: str) -> list[Path]:
    """The profile folders (LibreOffice, Chromium) the environment's programs use: those
    its session hands them, and those its running programs were started with."""
    e = pool.env(env)
    found: list[Path] = []
    if e.running is not None:
        session = e.running.session
        declared = [session.libreoffice_profile, session.browser_profile]
        found.extend(p for p in declared if p.exists())
    for program in e.programs:
        args = program.proc.args
        argv = [str(a) for a in args] if isinstance(args, list | tuple) else [str(args)]
        for arg in argv:
            for flag in _PROFILE_FLAGS:
                if arg.startswith(flag):
                    found.append(Path(arg[len(flag) :]))
    return list(dict.fromkeys(found))


def trees_of(pool: Pool, env: str, *, logs: bool = True) -> list[Path]:
    """Every folder that belongs to ``env``: its home, its programs' profiles and (with
    ``logs``) its log folder in the run folder; absolute (never resolved through a link the
    environment left) and without repeats."""
    e = pool.env(env)
    trees = [e.account.home, *profile_dirs(pool, env)]
    if logs:
        trees.append(e.spec.log_dir)
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


def clipboard_hits(pool: Pool, env: str) -> list[TokenHit]:
    """Every token in the environment's CLIPBOARD and PRIMARY selections."""
    hits: list[TokenHit] = []
    for selection in SELECTIONS:
        text = pool.env(env).read_clipboard(selection).text  # ClipboardUnreadable is a PoolError
        if text:
            hits.extend(scan_text(text, f"{env}:{selection}"))
    return hits


def holdings(pool: Pool, env: str, *, logs: bool = True, clipboard: bool = True) -> Holdings:
    """Search everything ``env`` holds; raise `PoolError` if any of it cannot be read."""
    found = Holdings(env)
    if clipboard:
        found.hits.extend(clipboard_hits(pool, env))
        found.searched.extend(f"{env}:{s}" for s in SELECTIONS)
    trees = trees_of(pool, env, logs=logs)
    found.hits.extend(scan_trees(trees))
    found.searched.extend(str(t) for t in trees)
    return found
