"""Reading the writable layer from the host gives docker diff's list, or says it cannot."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.verifiers.container.overlay import OverlayUnreadable, changes_from_graph_driver
from cleanroom.verifiers.container.tamper import Change, ChangeKind


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

    found = set(changes_from_graph_driver(graph))

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
