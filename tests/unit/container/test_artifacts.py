"""Harbor's artifact collection: which entries, where on the host, with what status."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from cleanroom.verifiers.container.agent_state import artifacts
from cleanroom.verifiers.container.task import ArtifactEntry

from .test_state_archive import archive, entry


def test_an_entry_whose_host_place_an_earlier_one_claimed_is_skipped() -> None:
    planned = artifacts.plan(
        [
            ArtifactEntry(source="/logs/artifacts"),
            ArtifactEntry(source="/logs/artifacts/answer.txt"),
            ArtifactEntry(source="/srv/out", destination="logs"),
            ArtifactEntry(source="/app/result.txt"),
        ]
    )

    assert [p.status for p in planned] == ["pending", "skipped", "skipped", "pending"]


def test_the_status_is_harbors() -> None:
    empty = archive(entry("artifacts", tarfile.DIRTYPE))
    full = archive(entry("artifacts", tarfile.DIRTYPE), entry("artifacts/a"))

    assert artifacts.status_of("missing", None) == "failed"
    assert artifacts.status_of("directory", empty) == "empty"
    assert artifacts.status_of("directory", full) == "ok"
    assert artifacts.status_of("file", archive(entry("a"))) == "ok"
    # a file whose only member was left out (a link out of it) gave nothing
    assert artifacts.status_of("symlink", archive()) == "failed"


def test_the_host_copy_lands_at_the_source_or_the_destination_with_a_manifest(
    tmp_path: Path,
) -> None:
    folder = artifacts.Collected(
        ArtifactEntry(source="/logs/artifacts"),
        status="ok",
        kind="directory",
        archive=archive(entry("artifacts", tarfile.DIRTYPE), entry("artifacts/a.txt")),
    )
    renamed = artifacts.Collected(
        ArtifactEntry(source="/app/result.txt", destination="results/final.txt"),
        status="ok",
        kind="file",
        archive=archive(entry("result.txt")),
    )
    missing = artifacts.Collected(ArtifactEntry(source="/var/x"), status="failed")

    artifacts.write_to_host(tmp_path, [folder, renamed, missing])

    assert (tmp_path / "logs/artifacts/a.txt").read_bytes() == b"x"
    assert (tmp_path / "results/final.txt").read_bytes() == b"x"
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [(m["destination"], m["type"], m["status"]) for m in manifest] == [
        ("artifacts/logs/artifacts", "directory", "ok"),
        ("artifacts/results/final.txt", "file", "ok"),
        ("artifacts/var/x", "file", "failed"),
    ]


def test_nothing_lands_outside_the_host_folder_whatever_the_archive_holds(
    tmp_path: Path,
) -> None:
    hostile = io.BytesIO()
    with tarfile.open(fileobj=hostile, mode="w") as tar:
        tar.addfile(entry("artifacts", tarfile.DIRTYPE))
        tar.addfile(entry("artifacts/out", tarfile.SYMTYPE, linkname="/etc"))
        tar.addfile(entry("../escaped", size=1), io.BytesIO(b"x"))
    hostile.seek(0)
    item = artifacts.Collected(
        ArtifactEntry(source="/logs/artifacts"), status="ok", kind="directory", archive=hostile
    )

    artifacts.write_to_host(tmp_path / "host", [item])

    assert not (tmp_path / "escaped").exists()
    assert not (tmp_path / "host/logs/artifacts/out").is_symlink()
    assert len(item.dropped) == 2


def test_a_second_collection_into_the_same_folder_replaces_the_first(tmp_path: Path) -> None:
    def collected(name: str) -> artifacts.Collected:
        return artifacts.Collected(
            ArtifactEntry(source="/logs/artifacts"),
            status="ok",
            kind="directory",
            archive=archive(entry("artifacts", tarfile.DIRTYPE), entry(f"artifacts/{name}")),
        )

    artifacts.write_to_host(tmp_path, [collected("first.txt")])
    artifacts.write_to_host(tmp_path, [collected("second.txt")])

    assert sorted(p.name for p in (tmp_path / "logs/artifacts").iterdir()) == ["second.txt"]
