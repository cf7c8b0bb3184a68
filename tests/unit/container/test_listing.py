"""Two listings compared give what changed, as a Docker diff would: run with the host's
own GNU find over real trees, odd names included; junk is an error, never a crash."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cleanroom.verifiers.container.agent_state.listing import (
    ListingError,
    changes_between,
    listing_command,
    parse_listing,
)


def listed(root: Path, extra: tuple[str, ...] = ()) -> bytes:
    command = listing_command([str(root)], extra)
    return subprocess.run(["sh", "-c", command], capture_output=True, check=True).stdout


def diff_of(root: Path, change: object) -> list[str]:
    before = parse_listing(listed(root))
    assert callable(change)
    change()
    after = parse_listing(listed(root))
    return [str(c).replace(str(root), "") for c in changes_between(before, after, "test").changes]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "fs"
    (root / "app").mkdir(parents=True)
    (root / "app" / "stats.py").write_text("def median(xs): ...\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text("assert True\n")
    (root / "link").symlink_to("app/stats.py")
    os.utime(root / "app" / "stats.py", (1_000_000, 1_000_000))
    return root


def test_an_unchanged_tree_has_no_changes(tree: Path) -> None:
    assert diff_of(tree, lambda: None) == []


def test_an_added_file_is_added_and_its_folder_is_not_a_change(tree: Path) -> None:
    assert diff_of(tree, lambda: (tree / "tests" / "reward.txt").write_text("1")) == [
        "A /tests/reward.txt"
    ]


def test_content_mode_owner_and_link_target_changes_are_modified(tree: Path) -> None:
    def change() -> None:
        (tree / "app" / "stats.py").write_text("def median(xs): return 0\n")
        (tree / "tests" / "test_x.py").chmod(0o600)
        (tree / "link").unlink()
        (tree / "link").symlink_to("tests/test_x.py")

    assert diff_of(tree, change) == ["C /app/stats.py", "C /link", "C /tests/test_x.py"]


def test_a_same_size_rewrite_is_seen_by_its_time(tree: Path) -> None:
    def change() -> None:
        (tree / "app" / "stats.py").write_text("def median(xs): ..!\n")  # same length

    assert diff_of(tree, change) == ["C /app/stats.py"]


def test_a_deleted_path_is_deleted(tree: Path) -> None:
    assert diff_of(tree, lambda: (tree / "tests" / "test_x.py").unlink()) == ["D /tests/test_x.py"]


def test_names_with_newlines_and_bytes_that_are_not_utf8_are_one_name_each(tree: Path) -> None:
    def change() -> None:
        (tree / "app" / "a\nD etc passwd").write_text("x")
        with open(os.path.join(os.fsencode(tree / "app"), b"\xff\xfe"), "w") as f:
            f.write("x")

    found = diff_of(tree, change)
    assert found == ["A /app/a\nD etc passwd", "A /app/\udcff\udcfe"]


def test_an_extra_root_on_its_own_filesystem_is_listed_whole(tree: Path) -> None:
    data = listed(tree, extra=(str(tree / "tests"),))
    entries = parse_listing(data).entries
    assert str(tree / "tests" / "test_x.py") in entries
    # A missing extra root is no error.
    assert parse_listing(listed(tree, extra=(str(tree / "nowhere"),))).entries


def test_a_cut_listing_reports_no_deletions_and_says_it_was_cut(tree: Path) -> None:
    before = parse_listing(listed(tree))
    after = parse_listing(listed(tree), max_entries=2)
    assert after.cut
    diff = changes_between(before, after, "test")
    assert not [c for c in diff.changes if c.kind.value == "D"]
    assert "agent's listing was cut" in diff.incomplete


@pytest.mark.parametrize(
    "junk",
    [
        b"f\x00644\x000\x00",  # a record cut short
        b"f\x00644\x000\x000\x001\x001.0\x00\x00/x",  # no final NUL
        b"f\x00xyz\x000\x000\x001\x001.0\x00\x00/x\x00",  # a mode that is not octal
        b"f\x00644\x000\x000\x001\x001.0\x00\x00relative\x00",  # a path that is not absolute
    ],
)
def test_bytes_that_are_not_a_listing_are_an_error(junk: bytes) -> None:
    with pytest.raises(ListingError):
        parse_listing(junk)
