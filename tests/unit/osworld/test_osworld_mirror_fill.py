"""Filling a mirror folder from a copy of the dataset served on loopback."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.verifiers.osworld.mirror import (
    DATASET_URL,
    Mirror,
    NotMirrored,
    fetch_task_file,
)
from cleanroom.verifiers.osworld.mirror_fill import (
    MANIFEST_NAME,
    FileState,
    FillReport,
    fill_mirror,
)

from .file_server import FileServer

SHEET = DATASET_URL + "libreoffice_calc/t1/Order_Sales_Serial%23.xlsx"
SHEET_PATH = "libreoffice_calc/t1/Order_Sales_Serial#.xlsx"
NOTES = DATASET_URL + "os/t2/notes.txt"


@pytest.fixture()
def server() -> Iterator[FileServer]:
    s = FileServer()
    s.files["/" + SHEET_PATH] = b"sheet bytes"
    s.files["/os/t2/notes.txt"] = b"notes"
    yield s
    s.close()


def _fill(server: FileServer, folder: Path, *urls: str, cap: int = 1 << 20) -> FillReport:
    return fill_mirror(urls, folder, source=server.base, timeout=5, cap=cap, tries=1)


def test_every_url_is_fetched_to_its_dataset_path(server: FileServer, tmp_path: Path) -> None:
    report = _fill(server, tmp_path / "m", SHEET, NOTES)

    assert (tmp_path / "m" / SHEET_PATH).read_bytes() == b"sheet bytes"
    assert (tmp_path / "m/os/t2/notes.txt").read_bytes() == b"notes"
    assert report.count(FileState.FETCHED) == 2 and report.complete


def test_the_index_records_each_files_url_size_and_sha256(
    server: FileServer, tmp_path: Path
) -> None:
    _fill(server, tmp_path, SHEET)

    index = json.loads((tmp_path / MANIFEST_NAME).read_text())

    assert index["dataset"] == DATASET_URL
    assert index["files"][SHEET_PATH] == {
        "url": SHEET,
        "size": len(b"sheet bytes"),
        "sha256": hashlib.sha256(b"sheet bytes").hexdigest(),
    }


def test_a_filled_folder_is_a_mirror_the_checker_reads(server: FileServer, tmp_path: Path) -> None:
    _fill(server, tmp_path, SHEET)

    data = fetch_task_file(SHEET, Mirror.parse(str(tmp_path)), timeout=5, cap=1 << 20)

    assert data == b"sheet bytes"


def test_a_file_changed_since_the_fill_is_not_read_as_the_tasks_file(
    server: FileServer, tmp_path: Path
) -> None:
    # Same size, other bytes: the index's sha256 tells them apart.
    _fill(server, tmp_path, SHEET)
    (tmp_path / SHEET_PATH).write_bytes(b"sheet BYTES")

    with pytest.raises(NotMirrored, match="no longer has the sha256"):
        fetch_task_file(SHEET, Mirror.parse(str(tmp_path)), timeout=5, cap=1 << 20)


def test_a_folder_with_no_index_is_read_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "os/t2").mkdir(parents=True)
    (tmp_path / "os/t2/notes.txt").write_bytes(b"by hand")

    assert fetch_task_file(NOTES, Mirror.parse(str(tmp_path)), timeout=5, cap=99) == b"by hand"


def test_a_second_fill_fetches_nothing_already_there(server: FileServer, tmp_path: Path) -> None:
    _fill(server, tmp_path, SHEET, NOTES)
    server.requests.clear()

    report = _fill(server, tmp_path, SHEET, NOTES)

    assert server.requests == []
    assert report.count(FileState.PRESENT) == 2


def test_a_stopped_fill_goes_on_with_the_files_it_had_not_fetched(
    server: FileServer, tmp_path: Path
) -> None:
    _fill(server, tmp_path, SHEET)
    server.requests.clear()

    report = _fill(server, tmp_path, SHEET, NOTES)

    assert server.requests == ["/os/t2/notes.txt"]
    assert [f.state for f in report.files] == [FileState.PRESENT, FileState.FETCHED]


def test_a_file_whose_size_differs_from_the_index_is_fetched_again(
    server: FileServer, tmp_path: Path
) -> None:
    _fill(server, tmp_path, NOTES)
    (tmp_path / "os/t2/notes.txt").write_bytes(b"no")

    report = _fill(server, tmp_path, NOTES)

    assert report.files[0].state is FileState.FETCHED
    assert (tmp_path / "os/t2/notes.txt").read_bytes() == b"notes"


def test_a_file_there_but_not_in_the_index_is_fetched_again(
    server: FileServer, tmp_path: Path
) -> None:
    (tmp_path / "os/t2").mkdir(parents=True)
    (tmp_path / "os/t2/notes.txt").write_bytes(b"notes")

    report = _fill(server, tmp_path, NOTES)

    assert report.files[0].state is FileState.FETCHED
    assert NOTES in (tmp_path / MANIFEST_NAME).read_text()


def test_a_file_the_source_lacks_fails_and_the_others_are_still_fetched(
    server: FileServer, tmp_path: Path
) -> None:
    missing = DATASET_URL + "os/t3/gone.txt"

    report = _fill(server, tmp_path, missing, NOTES)

    assert [f.state for f in report.files] == [FileState.FAILED, FileState.FETCHED]
    assert "HTTP 404" in report.files[0].why and not report.complete


def test_a_url_outside_the_dataset_is_refused_without_a_request(
    server: FileServer, tmp_path: Path
) -> None:
    report = _fill(server, tmp_path, server.base + "os/t2/notes.txt")

    assert report.files[0].state is FileState.FAILED and server.requests == []
    assert "not a file of the dataset" in report.files[0].why


def test_a_url_escaping_the_dataset_is_refused_and_nothing_is_written_outside(
    server: FileServer, tmp_path: Path
) -> None:
    folder = tmp_path / "m"

    report = _fill(server, folder, DATASET_URL + "os/%2e%2e/%2e%2e/escaped.txt")

    assert report.files[0].state is FileState.FAILED and server.requests == []
    assert not (tmp_path / "escaped.txt").exists()


def test_a_file_over_the_cap_fails_and_is_not_written(server: FileServer, tmp_path: Path) -> None:
    report = _fill(server, tmp_path, NOTES, cap=3)

    assert report.files[0].state is FileState.FAILED and "over 3 bytes" in report.files[0].why
    assert not (tmp_path / "os/t2/notes.txt").exists()


def test_a_link_in_a_files_place_is_replaced_never_written_through(
    server: FileServer, tmp_path: Path
) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"keep me")
    folder = tmp_path / "m"
    (folder / "os/t2").mkdir(parents=True)
    os.symlink(target, folder / "os/t2/notes.txt")

    report = _fill(server, folder, NOTES)

    assert report.complete and target.read_bytes() == b"keep me"
    assert not (folder / "os/t2/notes.txt").is_symlink()


def test_a_link_in_a_folders_place_fails_that_file_and_writes_nothing_through_it(
    server: FileServer, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = tmp_path / "m"
    folder.mkdir()
    os.symlink(elsewhere, folder / "os")

    report = _fill(server, folder, NOTES)

    assert report.files[0].state is FileState.FAILED and "cannot write" in report.files[0].why
    assert list(elsewhere.iterdir()) == []


def test_a_url_named_twice_is_fetched_once(server: FileServer, tmp_path: Path) -> None:
    report = _fill(server, tmp_path, NOTES, NOTES)

    assert len(report.files) == 1 and server.requests == ["/os/t2/notes.txt"]
