"""What an environment holds: a tree the scanner cannot fully read is never searched clean."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cleanroom.core import tokens
from cleanroom.environments.errors import SelectionUnanswered
from cleanroom.environments.memory import MemoryDesktops
from cleanroom.isolation.checks.holdings import PlaceUnreadable, clipboard_hits, scan_trees

TOK1 = "env01-w001-r0001-deadbeef"


def _listed(target: Any) -> str:
    """The folder a listing is of: the scanner lists folders by descriptor."""
    return os.readlink(f"/proc/self/fd/{target}") if isinstance(target, int) else str(target)


def _refuse(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make listing ``folder`` fail as a mode-000 folder does for its environment's user
    (the tests run as root, which lists every folder)."""
    real = os.scandir

    def scandir(path: Any) -> Any:
        if _listed(path) == str(folder):
            raise PermissionError(13, "Permission denied", str(folder))
        return real(path)

    monkeypatch.setattr(tokens.os, "scandir", scandir)


def test_a_folder_that_cannot_be_listed_makes_the_tree_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes.txt").write_text(TOK1)
    closed = tmp_path / ".cache"
    closed.mkdir()
    _refuse(closed, monkeypatch)

    with pytest.raises(PlaceUnreadable, match=r"\.cache: Permission denied"):
        scan_trees([tmp_path])


def test_a_missing_tree_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(PlaceUnreadable, match="No such file"):
        scan_trees([tmp_path / "gone"])


def test_an_entry_that_vanished_mid_walk_is_not_a_blind_spot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes.txt").write_text(TOK1)
    temp = tmp_path / "lock"
    temp.mkdir()
    real = os.scandir

    def scandir(path: Any) -> Any:
        if _listed(path) == str(temp):
            temp.rmdir()  # a program removed its temporary folder while the walk ran
        return real(path)

    monkeypatch.setattr(tokens.os, "scandir", scandir)
    assert [str(h.token) for h in scan_trees([tmp_path])] == [TOK1]


def test_a_selection_its_own_program_keeps_silent_is_noted_not_unreadable(
    tmp_path: Path,
) -> None:
    pool = MemoryDesktops(tmp_path / "run", envs=2)
    pool.start()
    pool._env("env02").set_clipboard(f"kept {TOK1}", ("PRIMARY",))
    pool._env("env02").desk.silent.add("CLIPBOARD")
    unanswered: list[str] = []
    hits = clipboard_hits(pool, "env02", unanswered)
    assert [str(h.token) for h in hits] == [TOK1] and unanswered == ["env02:CLIPBOARD"]
    with pytest.raises(SelectionUnanswered):
        clipboard_hits(pool, "env02")
