"""Reading the writable layer from the host gives docker diff's list, or says it cannot."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleanroom.host_files import remove_tree
from cleanroom.verifiers.container.decision.tamper import Change, ChangeKind
from cleanroom.verifiers.container.runtime.docker.overlay import (
    MAX_DEPTH,
    OverlayUnreadable,
    changes_from_graph_driver,
    walk_layer,
)


def layer(root: Path, *files: str) -> Path:
    for rel in files:
        path = root / rel.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    return root


def test_new_entries_are_added_and_entries_also_in_a_lower_layer_are_modified(
    tmp_path: Path,
) -> None:
    lower = layer(tmp_path / "lower", "/usr/bin/pytest", "/app/stats.py")
    upper = layer(tmp_path / "upper", "/usr/local/bin/pytest", "/app/stats.py")
    graph = {"Name": "overlay2", "Data": {"UpperDir": str(upper), "LowerDir": str(lower)}}

    found = set(changes_from_graph_driver(graph).changes)

    assert found == {
        Change("/usr", ChangeKind.MODIFIED),
        Change("/usr/local", ChangeKind.ADDED),
        Change("/usr/local/bin", ChangeKind.ADDED),
        Change("/usr/local/bin/pytest", ChangeKind.ADDED),
        Change("/app", ChangeKind.MODIFIED),
        Change("/app/stats.py", ChangeKind.MODIFIED),
    }


def test_another_storage_driver_is_unreadable() -> None:
    with pytest.raises(OverlayUnreadable, match="btrfs"):
        changes_from_graph_driver({"Name": "btrfs", "Data": {}})


def test_a_layer_folder_that_is_not_there_is_unreadable(tmp_path: Path) -> None:
    graph = {"Name": "overlay2", "Data": {"UpperDir": str(tmp_path / "gone"), "LowerDir": ""}}

    with pytest.raises(OverlayUnreadable):
        changes_from_graph_driver(graph)


def test_a_tree_deeper_than_path_max_is_walked_without_error_and_noted(tmp_path: Path) -> None:
    upper = tmp_path / "upper"
    upper.mkdir()
    fd = os.open(upper, os.O_RDONLY)
    for _ in range(2100):  # 2100 * 3 bytes: well past PATH_MAX
        os.mkdir("dd", dir_fd=fd)
        child = os.open("dd", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)

    diff = walk_layer(str(upper), [])

    assert len(diff.changes) == MAX_DEPTH + 1
    assert f"deeper than {MAX_DEPTH}" in diff.incomplete
    remove_tree(upper)  # pytest's own clean-up recurses, and would fail on this tree


def test_a_whiteout_is_a_deletion(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("a whiteout is a 0:0 character device; making one needs root")
    upper = tmp_path / "upper"
    (upper / "etc").mkdir(parents=True)
    os.mknod(upper / "etc" / "motd", 0o600 | stat.S_IFCHR, 0)
    lower = layer(tmp_path / "lower", "/etc/motd")

    diff = walk_layer(str(upper), [str(lower)])

    assert Change("/etc/motd", ChangeKind.DELETED) in diff.changes


names = st.text(alphabet="abc", min_size=1, max_size=2)
trees = st.recursive(
    st.just(None),
    lambda inner: st.dictionaries(names, inner, min_size=1, max_size=3),
    max_leaves=12,
)


def build(root: Path, tree: dict[str, object] | None) -> None:
    for name, sub in (tree or {}).items():
        if sub is None:
            (root / name).write_text("x")
        else:
            (root / name).mkdir()
            build(root / name, sub)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(upper_tree=trees, lower_tree=trees)
def test_the_walk_lists_every_entry_once_and_marks_those_below_as_modified(
    upper_tree: dict[str, object] | None, lower_tree: dict[str, object] | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        upper, lower = Path(tmp, "upper"), Path(tmp, "lower")
        upper.mkdir()
        lower.mkdir()
        build(upper, upper_tree if isinstance(upper_tree, dict) else None)
        build(lower, lower_tree if isinstance(lower_tree, dict) else None)

        diff = walk_layer(str(upper), [str(lower)])

        expected = {
            "/" + p.relative_to(upper).as_posix(): (
                ChangeKind.MODIFIED
                if os.path.lexists(lower / p.relative_to(upper))
                else ChangeKind.ADDED
            )
            for p in upper.rglob("*")
        }
        assert {c.path: c.kind for c in diff.changes} == expected
        assert len(diff.changes) == len(expected)
