"""Copying a process's output into its log stops at the log's cap or its folder's
budget, whichever comes first, with one note."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from cleanroom.environments.session.output_log import (
    LOG_FOLDER_MAX_BYTES,
    LogFolder,
    capped_output,
    captured_output,
    copy_capped,
    dropped_note,
    folder_full_note,
    log_folder,
)
from cleanroom.lifecycle import wait_until


def test_output_under_the_cap_is_copied_whole(tmp_path: Path) -> None:
    log = tmp_path / "p.log"
    assert copy_capped([b"ab", b"cd"], log, cap=10) == 0
    assert log.read_bytes() == b"abcd"


def test_output_past_the_cap_is_cut_there_and_noted_once(tmp_path: Path) -> None:
    log = tmp_path / "p.log"
    dropped = copy_capped(iter([b"abc"] * 1000), log, cap=10)
    assert dropped == 2990
    assert log.read_bytes() == b"abcabcabca" + dropped_note(10)


def test_what_the_log_held_counts_against_its_cap(tmp_path: Path) -> None:
    log = tmp_path / "p.log"
    log.write_bytes(b"12345678")
    copy_capped([b"abcd"], log, cap=10)
    assert log.read_bytes() == b"12345678ab" + dropped_note(10)


def test_a_folder_budget_cuts_a_log_short_of_its_own_cap_with_its_note(tmp_path: Path) -> None:
    folder = LogFolder(tmp_path, cap=200 + len(folder_full_note(200)))
    log = tmp_path / "p.log"
    dropped = copy_capped([b"x" * 150], log, cap=1000, folder=folder)
    dropped += copy_capped([b"y" * 150], log, cap=1000, folder=folder)
    assert dropped == 100
    assert log.read_bytes() == b"x" * 150 + b"y" * 50 + folder.note


def test_the_folder_budget_is_shared_by_every_log_of_the_folder(tmp_path: Path) -> None:
    folder = LogFolder(tmp_path, cap=300 + len(folder_full_note(300)))
    copy_capped([b"a" * 200], tmp_path / "one.log", cap=1000, folder=folder)
    copy_capped([b"b" * 200], tmp_path / "two.log", cap=1000, folder=folder)
    assert (tmp_path / "two.log").read_bytes() == b"b" * 100 + folder.note
    copy_capped([b"c" * 200], tmp_path / "three.log", cap=1000, folder=folder)
    assert (tmp_path / "three.log").read_bytes() == b""  # the folder's one note is taken


def test_a_folder_never_holds_more_than_its_cap(tmp_path: Path) -> None:
    folder = LogFolder(tmp_path, cap=500)
    for i in range(20):
        copy_capped([b"n" * 7] * 9, tmp_path / f"{i}.log", cap=40, folder=folder)
    assert sum(f.stat().st_size for f in tmp_path.iterdir()) <= 500


def test_a_folder_counts_what_its_files_held_when_first_used(tmp_path: Path) -> None:
    (tmp_path / "old.log").write_bytes(b"z" * 90)
    folder = LogFolder(tmp_path, cap=100 + len(folder_full_note(100)))
    assert folder.used == 90
    assert folder.take(50) == 10


def test_a_replaced_log_gives_no_room_back(tmp_path: Path) -> None:
    folder = LogFolder(tmp_path, cap=100 + len(folder_full_note(100)))
    log = tmp_path / "probe.log"
    copy_capped([b"p" * 80], log, cap=1000, folder=folder)
    log.unlink()
    copy_capped([b"q" * 80], log, cap=1000, folder=folder)
    assert log.read_bytes() == b"q" * 20 + folder.note


def test_every_log_of_one_folder_draws_on_one_budget(tmp_path: Path) -> None:
    a, b = log_folder(tmp_path / "env01"), log_folder(tmp_path / "env01" / ".." / "env01")
    assert a is b
    assert log_folder(tmp_path / "env02") is not a
    assert a.cap == LOG_FOLDER_MAX_BYTES


def test_a_log_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    (tmp_path / "p.log").symlink_to(target)
    assert copy_capped([b"abc"], tmp_path / "p.log", cap=10) == 3
    assert target.read_bytes() == b""


def test_a_process_handed_no_log_writes_to_nowhere(tmp_path: Path) -> None:
    with capped_output(None) as out:
        os.write(out, b"gone")
    assert list(tmp_path.iterdir()) == []


def test_a_capture_keeps_the_first_bytes_and_drains_the_rest_to_the_end() -> None:
    with captured_output(cap=10) as (out, capture):
        writer = os.dup(out)
    try:
        for _ in range(64):
            os.write(writer, b"0123456789" * 1000)  # never blocks: the reader drains
    finally:
        os.close(writer)
    assert capture.wait(5)
    assert capture.value() == b"0123456789"


def test_a_capture_whose_pipe_is_still_held_gives_up_at_the_deadline() -> None:
    with captured_output() as (out, capture):
        held = os.dup(out)
    try:
        os.write(held, b"partial")
        assert not capture.wait(0.2)
        assert wait_until(lambda: capture.value() == b"partial", 5, 0.01)
    finally:
        os.close(held)
    assert capture.wait(5)


def test_a_log_the_disk_refuses_still_has_its_stream_read_to_the_end(tmp_path: Path) -> None:
    read: list[bytes] = []

    def chunks() -> Iterator[bytes]:
        for chunk in (b"a" * 10, b"b" * 10):
            read.append(chunk)
            yield chunk

    # /dev/full refuses every write as a full disk would.
    copy_capped(chunks(), Path("/dev/full"), cap=100, folder=LogFolder(tmp_path))
    assert read == [b"a" * 10, b"b" * 10]
