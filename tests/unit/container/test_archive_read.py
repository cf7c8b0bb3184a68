"""A file observed from the archive API's stat and tar stream, by the host reader's rules.

The stat and the stream are built here as the daemon sends them; the real daemon is
exercised by the integration tests (tests/integration/container/test_archive_read.py).
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from typing import Any

import docker
import pytest
import requests

from cleanroom.core.observed_file import FileKind
from cleanroom.docker_layer import Docker
from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.runtime.docker.archive_read import (
    ArchiveReadError,
    kind_of_mode,
    observe,
)

PATH = "/logs/verifier/reward.txt"
REGULAR = 0o644
FIFO = (1 << 25) | 0o644
SYMLINK = (1 << 27) | 0o777
DIRECTORY = (1 << 31) | 0o755
CHAR_DEVICE = (1 << 26) | (1 << 21) | 0o666
BLOCK_DEVICE = (1 << 26) | 0o660
SOCKET = (1 << 24) | 0o755


def tar_of(data: bytes, kind: bytes = tarfile.REGTYPE, size: int | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("reward.txt")
        info.type = kind
        if kind == tarfile.REGTYPE:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        else:
            tar.addfile(info)
    raw = buf.getvalue()
    return raw if size is None else raw[:size]


def chunks(raw: bytes, size: int = 1000) -> Iterator[bytes]:
    for i in range(0, len(raw), size):
        yield raw[i : i + size]


class Untouched:
    """A stream that fails the test if anything reads it."""

    def __iter__(self) -> Untouched:
        return self

    def __next__(self) -> bytes:
        raise AssertionError("the stream of a file that is not regular was read")


def test_a_regular_file_is_read_with_its_size() -> None:
    found = observe(PATH, {"mode": REGULAR, "size": 2}, chunks(tar_of(b"1\n")), 64)

    assert (found.kind, found.data, found.size) == (FileKind.REGULAR, b"1\n", 2)


def test_an_empty_file_is_read_as_empty() -> None:
    found = observe(PATH, {"mode": REGULAR, "size": 0}, chunks(tar_of(b"")), 64)

    assert (found.kind, found.data, found.size) == (FileKind.REGULAR, b"", 0)


def test_a_file_over_the_cap_is_oversize_and_only_its_first_bytes_are_pulled() -> None:
    raw = tar_of(b"1" * 5_000_000)
    pulled: list[int] = []

    def counted() -> Iterator[bytes]:
        for chunk in chunks(raw, 4096):
            pulled.append(len(chunk))
            yield chunk

    found = observe(PATH, {"mode": REGULAR, "size": 5_000_000}, counted(), 100)

    assert (found.kind, found.data, found.size) == (FileKind.OVERSIZE, b"1" * 100, 5_000_000)
    assert sum(pulled) < 64 * 1024


@pytest.mark.parametrize(
    ("mode", "note"),
    [
        (FIFO, "fifo"),
        (DIRECTORY, "directory"),
        (CHAR_DEVICE, "character device"),
        (BLOCK_DEVICE, "block device"),
        (SOCKET, "socket"),
    ],
)
def test_what_is_not_a_regular_file_is_reported_from_its_stat_and_never_read(
    mode: int, note: str
) -> None:
    found = observe(PATH, {"mode": mode, "size": 0}, Untouched(), 64)

    assert (found.kind, found.note) == (FileKind.OTHER, note)


def test_a_link_is_reported_with_its_target_and_never_followed() -> None:
    found = observe(PATH, {"mode": SYMLINK, "linkTarget": "/etc/passwd"}, Untouched(), 64)

    assert (found.kind, found.note) == (FileKind.SYMLINK, "/etc/passwd")


def test_a_path_replaced_between_the_stat_and_the_stream_is_not_read() -> None:
    found = observe(PATH, {"mode": REGULAR, "size": 2}, chunks(tar_of(b"", tarfile.FIFOTYPE)), 64)

    assert (found.kind, found.note) == (FileKind.OTHER, "replaced while it was read")


@pytest.mark.parametrize("raw", [b"", b"not a tar archive" * 40, tar_of(b"0.75\n")[:514]])
def test_a_stream_cut_short_or_not_a_tar_is_an_archive_read_error(raw: bytes) -> None:
    with pytest.raises(ArchiveReadError):
        observe(PATH, {"mode": REGULAR, "size": 5}, chunks(raw), 64)


def test_go_file_modes_are_named() -> None:
    assert kind_of_mode(REGULAR) == (FileKind.REGULAR, "")
    assert kind_of_mode(SYMLINK | (1 << 31)) == (FileKind.SYMLINK, "")


class _ArchiveApi:
    """Answers each archive request with the next scripted stream; runs no command."""

    def __init__(self, streams: list[bytes], missing: bool = False, refusal: str = "") -> None:
        self.streams = streams
        self.missing = missing
        self.refusal = refusal
        self.calls = 0

    def get_archive(self, container: str, path: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        if self.missing:
            raise docker.errors.NotFound("Could not find the file in container")
        if self.refusal:
            response = requests.Response()
            response.status_code = 500
            raise docker.errors.APIError("server error", response, self.refusal)
        raw = self.streams[min(self.calls, len(self.streams) - 1)]
        self.calls += 1
        return chunks(raw), {"mode": REGULAR, "size": 5, "name": "reward.txt"}

    def exec_create(self, *_: Any, **__: Any) -> dict[str, str]:
        raise AssertionError("a command was run in the container")


class _Client:
    def __init__(self, api: _ArchiveApi) -> None:
        self.api = api


def _runtime(api: _ArchiveApi) -> DockerRuntime:
    return DockerRuntime(Docker(_Client(api), api, RuntimeUnavailable))


def test_the_runtime_reads_through_the_archive_and_runs_nothing() -> None:
    api = _ArchiveApi([tar_of(b"0.75\n")])

    found = _runtime(api).files.read("ctr", PATH)

    assert (found.kind, found.data) == (FileKind.REGULAR, b"0.75\n")


def test_a_stream_cut_short_is_read_again() -> None:
    api = _ArchiveApi([tar_of(b"0.75\n")[:514], tar_of(b"0.75\n")])

    found = _runtime(api).files.read("ctr", PATH)

    assert (found.data, api.calls) == (b"0.75\n", 2)


def test_a_stream_that_stays_short_is_the_daemon_failing_not_a_reward() -> None:
    api = _ArchiveApi([tar_of(b"0.75\n")[:514]])

    with pytest.raises(RuntimeUnavailable, match="in 3 attempts"):
        _runtime(api).files.read("ctr", PATH)


def test_a_path_the_daemon_does_not_find_is_missing() -> None:
    found = _runtime(_ArchiveApi([], missing=True)).files.read("ctr", PATH)

    assert found.kind is FileKind.MISSING


def test_a_path_under_a_file_is_missing_as_for_a_program_that_looks() -> None:
    refusal = "lstat /merged/logs/verifier/file/reward.txt: not a directory"

    found = _runtime(_ArchiveApi([], refusal=refusal)).files.read("ctr", PATH)

    assert found.kind is FileKind.MISSING


def test_any_other_refusal_of_the_daemon_is_its_failure_not_a_missing_reward() -> None:
    with pytest.raises(RuntimeUnavailable, match="no space left"):
        _runtime(_ArchiveApi([], refusal="no space left on device")).files.read("ctr", PATH)


@pytest.mark.parametrize(
    ("refusal", "note"),
    [
        ("evalSymlinksInScope: too many links in /merged/app", "a loop of symbolic links"),
        ("lstat /merged/aaaa/bbbb: file name too long", "a path too long to follow"),
    ],
)
def test_links_the_daemon_cannot_follow_are_what_the_agent_left_not_its_failure(
    refusal: str, note: str
) -> None:
    found = _runtime(_ArchiveApi([], refusal=refusal)).files.read("ctr", PATH)

    assert (found.kind, found.note) == (FileKind.OTHER, note)
