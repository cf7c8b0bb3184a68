"""Copying a program's output into its log stops at the cap, with one note."""

from __future__ import annotations

from pathlib import Path

from cleanroom.environments.session.output_log import copy_capped, dropped_note


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
