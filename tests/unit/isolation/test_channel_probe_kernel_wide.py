"""The channel probe's kernel-wide classes: what its locks spell in /proc/locks, and
whose AIO context a step of fs.aio-nr is."""

from __future__ import annotations

import itertools

from cleanroom.isolation.checks.channel_probe import (
    AIO_BASE,
    CACHE_ROUNDS,
    LOCK_BASE,
    aio_senders,
    evicted,
    lock_starts,
    spelled_in_locks,
)


def _listing(starts: list[int], inode: str, first_id: int = 1) -> list[str]:
    return [
        f"{first_id + i}: OFDLCK ADVISORY  WRITE -1 {inode} {s} {s}" for i, s in enumerate(starts)
    ]


def test_the_locks_of_two_files_spell_each_files_token_back() -> None:
    lines = [
        "1: POSIX  ADVISORY  WRITE 812 00:1a:77 0 EOF",  # an ordinary lock: no letters
        *_listing(lock_starts("env01-w001-r0007-abc"), "fe:00:11", 2),
        *_listing(lock_starts("env02-w001-r0007-def"), "fe:00:12", 40),
    ]
    assert spelled_in_locks("\n".join(lines)) == {
        "fe:00:11": b"env01-w001-r0007-abc",
        "fe:00:12": b"env02-w001-r0007-def",
    }


def test_a_waiters_line_and_a_range_outside_the_spelling_add_nothing() -> None:
    start = lock_starts("x")[0]
    lines = [
        f"3: -> OFDLCK ADVISORY  WRITE -1 fe:00:11 {start} {start}",
        f"4: OFDLCK ADVISORY  WRITE -1 fe:00:11 {LOCK_BASE - 1} {LOCK_BASE - 1}",
        f"5: OFDLCK ADVISORY  WRITE -1 fe:00:11 {LOCK_BASE + 300} {LOCK_BASE + 300}",
    ]
    assert spelled_in_locks("\n".join(lines)) == {}


def test_no_two_letters_of_a_spelling_are_adjacent_so_the_kernel_keeps_them_apart() -> None:
    starts = lock_starts("\xff\x00" * 10)
    assert all(b - a > 1 for a, b in itertools.pairwise(starts))


def test_a_step_of_exactly_one_environments_context_names_it_and_nothing_else_does() -> None:
    assert aio_senders(AIO_BASE + 2, 3) == {2}
    assert aio_senders(-AIO_BASE, 3) == {0}
    assert aio_senders(2 * AIO_BASE + 1, 3) == set()  # two at once
    assert aio_senders(128, 3) == set()  # another program's


def test_a_file_gone_in_half_the_rounds_asked_is_evicted_and_the_control_is_never_named() -> None:
    half = [1, 0] * (CACHE_ROUNDS // 2)
    seen = [half, [0] * CACHE_ROUNDS, [1] * CACHE_ROUNDS]
    assert evicted(seen, timed=False) == [0]


def test_timed_a_file_is_evicted_only_when_read_from_disk_against_the_control() -> None:
    cached, disk = [18_000] * CACHE_ROUNDS, [200_000] * CACHE_ROUNDS
    # a cold cached read after a wait is slower than an immediate one, but not the disk
    assert evicted([disk, cached, cached], timed=True) == [0]
    # on a loaded machine every read is slow: only a file slower than the control counts
    slow, slower = [90_000] * CACHE_ROUNDS, [400_000] * CACHE_ROUNDS
    assert evicted([slow, slower, slow], timed=True) == [1]
