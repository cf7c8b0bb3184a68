"""Where a task's files are fetched from: the dataset, a mirror folder or a mirror URL.

The folder mirror is a folder the tests fill; the URL mirror is a server on loopback.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.osworld.download import DownloadError, fetch
from cleanroom.verifiers.osworld.evaluator import check_task
from cleanroom.verifiers.osworld.mirror import (
    DATASET_URL,
    FolderFile,
    Mirror,
    NotMirrored,
    RemoteFile,
    dataset_path,
    fetch_task_file,
    resolve,
    task_file_urls,
)
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task import Task, parse_task
from cleanroom.verifiers.osworld.task_list import read_task_list

from .file_server import FileServer
from .test_osworld_evaluator import ScriptedGuest

GOLD = DATASET_URL + "multi_apps/abc/Course%20Timetable.xlsx"
GOLD_PATH = "multi_apps/abc/Course Timetable.xlsx"


@pytest.fixture()
def server() -> Iterator[FileServer]:
    s = FileServer()
    yield s
    s.close()


def _folder(tmp_path: Path, files: dict[str, bytes]) -> Mirror:
    root = tmp_path / "mirror"
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    root.mkdir(exist_ok=True)
    return Mirror.parse(str(root))


def _fetch(url: str, mirror: Mirror | None, cap: int = 1 << 20) -> bytes:
    return fetch_task_file(url, mirror, timeout=5, cap=cap)


# -- resolving a URL ------------------------------------------------------------------


def test_without_a_mirror_a_url_is_fetched_as_the_task_spells_it() -> None:
    assert resolve(GOLD, None) == RemoteFile(GOLD)


def test_a_folder_mirror_holds_a_file_under_its_decoded_dataset_path(tmp_path: Path) -> None:
    mirror = Mirror.parse(str(tmp_path))

    assert resolve(GOLD, mirror) == FolderFile(str(tmp_path), GOLD_PATH)


def test_a_url_mirror_serves_the_same_path_as_spelled_under_its_base() -> None:
    mirror = Mirror.parse("http://mirror.test/osworld")

    assert resolve(GOLD, mirror) == RemoteFile(
        "http://mirror.test/osworld/multi_apps/abc/Course%20Timetable.xlsx"
    )


def test_a_url_outside_the_dataset_is_not_mirrored_and_the_error_names_both() -> None:
    mirror = Mirror.parse("http://mirror.test/")
    url = "https://example.org/file.xlsx"

    with pytest.raises(NotMirrored) as caught:
        resolve(url, mirror)

    assert url in str(caught.value) and "mirror http://mirror.test/" in str(caught.value)


@pytest.mark.parametrize(
    "tail",
    [
        "multi_apps/../../../etc/passwd",
        "multi_apps/%2e%2e/%2E%2E/etc/passwd",
        "multi_apps/abc%2F..%2F..%2Fsecret",
        "multi_apps/./abc/file",
        "multi_apps//file",
        "multi_apps/abc/file?download=1",
        "multi_apps/abc/file#part",
        "multi_apps/abc/nul%00byte",
        "",
    ],
)
def test_a_dataset_url_that_names_no_file_inside_the_dataset_is_refused(
    tmp_path: Path, tail: str
) -> None:
    with pytest.raises(NotMirrored, match=r"does not name a file|query or a fragment"):
        resolve(DATASET_URL + tail, Mirror.parse(str(tmp_path)))


def test_a_url_of_another_dataset_has_no_dataset_path() -> None:
    assert dataset_path("https://huggingface.co/datasets/other/resolve/main/a.txt") is None


@pytest.mark.parametrize(
    ("spec", "location"),
    [("http://m.test", "http://m.test/"), ("https://m.test/a/", "https://m.test/a/")],
)
def test_a_mirror_url_always_ends_in_a_slash(spec: str, location: str) -> None:
    assert Mirror.parse(spec).location == location


def test_a_mirror_folder_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    assert Mirror.parse("copy").location == str(tmp_path / "copy")


# -- fetching from a mirror folder --------------------------------------------------------


def test_a_file_is_read_from_the_mirror_folder(tmp_path: Path) -> None:
    mirror = _folder(tmp_path, {GOLD_PATH: b"gold"})

    assert _fetch(GOLD, mirror) == b"gold"


def test_a_file_the_mirror_folder_lacks_is_an_error_naming_the_url_and_the_mirror(
    tmp_path: Path,
) -> None:
    mirror = _folder(tmp_path, {})

    with pytest.raises(NotMirrored) as caught:
        _fetch(GOLD, mirror)

    assert GOLD in str(caught.value) and mirror.location in str(caught.value)


def test_a_link_in_the_files_place_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"host secret")
    mirror = _folder(tmp_path, {})
    (tmp_path / "mirror/multi_apps/abc").mkdir(parents=True)
    os.symlink(secret, tmp_path / "mirror" / GOLD_PATH)

    with pytest.raises(NotMirrored, match="not in it"):
        _fetch(GOLD, mirror)


def test_a_link_in_a_folders_place_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "abc").mkdir(parents=True)
    (elsewhere / "abc/Course Timetable.xlsx").write_bytes(b"not the mirror's")
    mirror = _folder(tmp_path, {})
    os.symlink(elsewhere, tmp_path / "mirror/multi_apps")

    with pytest.raises(NotMirrored, match="not in it"):
        _fetch(GOLD, mirror)


def test_a_fifo_in_the_mirror_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    mirror = _folder(tmp_path, {})
    (tmp_path / "mirror/multi_apps/abc").mkdir(parents=True)
    os.mkfifo(tmp_path / "mirror" / GOLD_PATH)

    with pytest.raises(NotMirrored, match="fifo"):
        _fetch(GOLD, mirror)


def test_a_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    mirror = _folder(tmp_path, {GOLD_PATH: b"x" * 101})

    with pytest.raises(NotMirrored, match="over"):
        _fetch(GOLD, mirror, cap=100)


# -- fetching from a mirror URL -----------------------------------------------------------


def test_a_file_is_fetched_from_the_mirror_url_under_the_same_path(server: FileServer) -> None:
    server.files["/copy/" + GOLD_PATH] = b"gold"

    data = _fetch(GOLD, Mirror.parse(server.base + "copy"))

    assert data == b"gold"
    assert server.requests == ["/copy/multi_apps/abc/Course%20Timetable.xlsx"]


def test_a_file_the_mirror_url_lacks_is_an_error_naming_the_url_and_the_mirror(
    server: FileServer,
) -> None:
    with pytest.raises(NotMirrored) as caught:
        _fetch(GOLD, Mirror.parse(server.base))

    assert GOLD in str(caught.value) and server.base in str(caught.value)
    assert "HTTP 404" in str(caught.value)


def test_a_download_over_the_cap_stops_with_an_error(server: FileServer) -> None:
    server.files["/big"] = b"x" * 5000

    with pytest.raises(DownloadError, match="over 1000 bytes"):
        fetch(server.base + "big", timeout=5, cap=1000)


# -- the files a task fetches -------------------------------------------------------------


def test_a_tasks_files_are_its_download_urls_and_cloud_file_paths_each_once() -> None:
    other = DATASET_URL + "os/t/other.txt"
    t = parse_task(
        {
            "id": "t",
            "config": [
                {"type": "download", "parameters": {"files": [{"url": GOLD, "path": "/a"}]}},
                {"type": "launch", "parameters": {"command": ["x"]}},
            ],
            "evaluator": {
                "func": ["compare_text_file", "compare_text_file"],
                "result": [{"type": "vm_file", "path": "/a", "dest": "a"}] * 2,
                "expected": [
                    {"type": "cloud_file", "path": GOLD, "dest": "g"},
                    {
                        "type": "cloud_file",
                        "multi": True,
                        "path": [other, GOLD],
                        "dest": ["o", "g"],
                    },
                ],
            },
        },
        "d/t.json",
    )

    assert task_file_urls(t) == (GOLD, other)


# -- through the checker ------------------------------------------------------------------


def _settings(tmp_path: Path, mirror: Mirror) -> CheckSettings:
    return CheckSettings(cache_root=str(tmp_path / "cache"), getter_timeout=5, mirror=mirror)


TASK_FILE = DATASET_URL + "os/t/notes.txt"
EXPECTED = DATASET_URL + "os/t/notes_gold.txt"


def _checked_task() -> Task:
    return parse_task(
        {
            "id": "t",
            "config": [
                {
                    "type": "download",
                    "parameters": {"files": [{"url": TASK_FILE, "path": "/home/user/notes.txt"}]},
                }
            ],
            "evaluator": {
                "func": "compare_text_file",
                "result": {"type": "vm_file", "path": "/home/user/notes.txt", "dest": "r.txt"},
                "expected": {"type": "cloud_file", "path": EXPECTED, "dest": "g.txt"},
            },
        },
        "os/t.json",
    )


def test_download_steps_and_cloud_file_getters_both_read_the_mirror_folder(
    tmp_path: Path,
) -> None:
    mirror = _folder(tmp_path, {"os/t/notes.txt": b"same", "os/t/notes_gold.txt": b"same"})
    guest = ScriptedGuest({})

    outcome = check_task(_checked_task(), guest, _settings(tmp_path, mirror), run_setup=True)

    assert guest.files["/home/user/notes.txt"] == b"same"
    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)


def test_a_download_the_mirror_lacks_makes_the_run_invalid_not_a_zero(tmp_path: Path) -> None:
    mirror = _folder(tmp_path, {"os/t/notes_gold.txt": b"same"})

    outcome = check_task(
        _checked_task(), ScriptedGuest({}), _settings(tmp_path, mirror), run_setup=True
    )

    assert outcome.status is Status.INVALID and outcome.score is None
    assert TASK_FILE in outcome.detail and mirror.location in outcome.detail


def test_an_expected_file_the_mirror_lacks_makes_the_run_invalid_not_a_zero(
    tmp_path: Path,
) -> None:
    mirror = _folder(tmp_path, {"os/t/notes.txt": b"same"})

    outcome = check_task(
        _checked_task(), ScriptedGuest({}), _settings(tmp_path, mirror), run_setup=True
    )

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.CHECKER_ERROR)
    assert EXPECTED in outcome.detail and mirror.location in outcome.detail


def test_every_file_of_osworlds_task_set_has_its_own_path_in_the_dataset() -> None:
    task_set = Path(__file__).resolve().parents[2] / "data/osworld/evaluation_examples"
    listed = read_task_list([task_set / "test_all.json"])
    urls = {u for t in listed.tasks for u in task_file_urls(t)}

    paths = {dataset_path(u) for u in urls}

    assert len(urls) == 661 and len(paths) == 661 and None not in paths
