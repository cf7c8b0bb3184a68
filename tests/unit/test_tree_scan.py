"""The tree scanner: every token in files of any size and in every file under a folder,
with every place it could not read."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cleanroom import tree_scan
from cleanroom.core import tokens
from cleanroom.core.tokens import RolloutId


def test_scan_finds_a_token_straddling_a_chunk_boundary_exactly_once(tmp_path: Path) -> None:
    token = "env05-w002-r0003-cafef00d"
    for cut in range(len(token) + 2):
        path = tmp_path / f"f{cut}"
        path.write_bytes(b"." * (64 - cut) + token.encode() + b"." * 70)
        hits = tree_scan.scan_file(path, chunk_size=64)
        assert [(str(h.token), h.offset) for h in hits] == [(token, 64 - cut)], cut


def test_scan_keeps_lookbehind_at_a_chunk_boundary(tmp_path: Path) -> None:
    path = tmp_path / "glued"
    path.write_bytes(b"a" * 63 + b"x" + b"env05-w002-r0003-cafef00d" + b"\n" * 80)
    assert tree_scan.scan_file(path, chunk_size=64) == []


def test_scan_tree_finds_every_planted_token_and_no_false_ones(tmp_path: Path) -> None:
    rng = random.Random(7)
    planted: dict[str, str] = {}
    for i in range(300):
        folder = tmp_path / f"d{i % 17}" / f"e{i % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"f{i}.bin"
        noise = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 3000)))
        # Near misses that a sloppy pattern would report.
        decoys = b" env01-w001-r0001-deadbee env1-w001-r0001-deadbeef ENV01-W001-R0001-DEADBEEF "
        if i % 3 == 0:
            token = str(tokens.mint(RolloutId(f"env{i % 9:02d}", i % 4, i)))
            planted[token] = str(path)
            half = len(noise) // 2
            body = noise[:half] + b" " + token.encode() + b" " + noise[half:]
        else:
            body = noise
        path.write_bytes(decoys + body)
    (tmp_path / "link").symlink_to(tmp_path / "d0")  # never followed: no double count

    scan = tree_scan.scan_tree(tmp_path)
    hits = scan.hits

    assert {str(h.token): h.source for h in hits} == planted
    assert len(hits) == len(planted)
    assert scan.errors == []
    assert tree_scan.scan_tree(tmp_path, workers=2).hits == hits  # worker threads: same answer


def test_scan_tree_reports_a_file_that_vanished_instead_of_skipping_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = tmp_path / "kept.txt"
    kept.write_text("env01-w001-r0001-deadbeef")
    vanished = tmp_path / "vanished.txt"  # listed, then deleted before it was read
    vanished.write_text("env02-w001-r0001-deadbeef")
    real = os.scandir

    def list_then_remove(path: Any) -> Any:
        listing = list(real(path))
        vanished.unlink(missing_ok=True)
        return contextlib.nullcontext(iter(listing))

    monkeypatch.setattr(tree_scan.os, "scandir", list_then_remove)
    scan = tree_scan.scan_tree(tmp_path)
    monkeypatch.undo()

    assert [h.env for h in scan.hits] == ["env01"]
    assert [(e.path, e.vanished) for e in scan.errors] == [(str(vanished), True)]
    assert scan.blind_spots == []  # what vanished holds no token any more


def _tree_of_sizes(root: Path, sizes: list[int]) -> dict[tuple[str, int], str]:
    """Files of the given sizes, each with a token at its start, its middle and its end
    (where it fits): what a scan must report, as (path, offset) -> token."""
    planted: dict[tuple[str, int], str] = {}
    for i, size in enumerate(sizes):
        path = root / f"d{i % 3}" / f"f{i:03d}"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = bytearray(b"." * size)
        for k, at in enumerate((0, size // 2, size - 25)):
            token = f"env{i % 90 + 10:02d}-w{k:03d}-r{i:04d}-deadbeef"
            clear = all(abs(at - o) > 26 for (p, o) in planted if p == str(path))
            if at >= 0 and at + 25 <= size and clear:
                body[at : at + 25] = token.encode()
                planted[(str(path), at)] = token
        path.write_bytes(bytes(body))
    return planted


@pytest.mark.parametrize("engine", ["hyperscan", "hyperscan-always", "re"])
@pytest.mark.parametrize("workers", [1, 2, 4])
def test_scan_tree_reads_small_and_large_files_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int, engine: str
) -> None:
    if engine == "hyperscan-always":  # even a short stream's fills go to Hyperscan
        monkeypatch.setattr(tokens, "_HS_MIN_BYTES", 0)
    elif engine == "re":
        monkeypatch.setattr(tokens, "_ENGINE", None)
    # A small batch buffer, so files are matched many to a call, a file outgrows a half
    # full batch, and files far larger than the buffer stream through it.
    monkeypatch.setattr(tree_scan, "_BATCH", 300)
    monkeypatch.setattr(tree_scan, "_REFILL", 120)
    monkeypatch.setattr(tree_scan, "_FILES_PER_TASK", 3)
    rng = random.Random(3)
    sizes = [rng.choice([0, 1, 24, 25, 60, 119, 200, 299, 300, 301, 900, 5000]) for _ in range(90)]
    planted = _tree_of_sizes(tmp_path, sizes)

    scan = tree_scan.scan_tree(tmp_path, workers=workers)

    assert {(h.source, h.offset): str(h.token) for h in scan.hits} == planted
    assert [(h.source, h.offset) for h in scan.hits] == sorted(planted)
    assert scan.errors == []


def test_scan_tree_never_joins_two_files_into_one_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read back to back, the end of one file and the start of the next spell a token.
    monkeypatch.setattr(tree_scan, "_FILES_PER_TASK", 100)
    (tmp_path / "a").write_bytes(b"x " + b"env01-w001-r0001-dead")
    (tmp_path / "b").write_bytes(b"beef y")
    (tmp_path / "c").write_bytes(b"env01-w001-r0001-deadbeef")  # whole: found
    (tmp_path / "d").write_bytes(b"0 tail")  # would make c's token longer if joined
    scan = tree_scan.scan_tree(tmp_path, workers=1)
    assert [(Path(h.source).name, h.offset) for h in scan.hits] == [("c", 0)]


def test_a_thread_that_fails_fails_the_scan_instead_of_hanging_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(40):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "f").write_text("x")

    def broken(self: Any, *args: Any) -> None:
        raise RuntimeError("broken reader")

    monkeypatch.setattr(tree_scan._Reader, "_read", broken)
    with pytest.raises(RuntimeError, match="broken reader"):
        tree_scan.scan_tree(tmp_path, workers=3)


def _scan_as_nobody(root: Path) -> list[tuple[str, str, bool]]:
    """The tree scan's errors, walked as an unprivileged user in a forked child (root
    reads every folder whatever its mode, so the walk must run without its rights)."""
    if os.geteuid() != 0:
        return [(e.path, e.reason, e.vanished) for e in tree_scan.scan_tree(root).errors]
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, walk, report, and never return to pytest
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            found = [(e.path, e.reason, e.vanished) for e in tree_scan.scan_tree(root).errors]
            with os.fdopen(write_end, "w") as out:
                json.dump(found, out)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as got:
        text = got.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, text
    return [(p, r, v) for p, r, v in json.loads(text)]


@pytest.fixture()
def shared_tmp() -> Iterator[Path]:
    """A folder an unprivileged user can reach (pytest's own is its owner's alone)."""
    path = Path(tempfile.mkdtemp(prefix="cleanroom-scan-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for sub in path.rglob("*"):
            if sub.is_dir() and not sub.is_symlink():
                sub.chmod(0o755)
        shutil.rmtree(path)


def test_scan_tree_reports_a_folder_it_cannot_list_and_a_file_it_cannot_read(
    shared_tmp: Path,
) -> None:
    (shared_tmp / "open.txt").write_text("env01-w001-r0001-deadbeef")
    (shared_tmp / "open.txt").chmod(0o644)
    closed = shared_tmp / "closed"
    closed.mkdir()
    (closed / "inside.txt").write_text("env02-w001-r0001-deadbeef")
    closed.chmod(0o000)
    secret = shared_tmp / "secret.txt"
    secret.write_text("env03-w001-r0001-deadbeef")
    secret.chmod(0o000)

    errors = _scan_as_nobody(shared_tmp)

    assert sorted((p, v) for p, _, v in errors) == [(str(closed), False), (str(secret), False)]
    assert all("denied" in r for _, r, _ in errors)


def test_scan_tree_reports_a_missing_root_as_blind(tmp_path: Path) -> None:
    scan = tree_scan.scan_tree(tmp_path / "gone")
    assert scan.hits == []
    assert [e.path for e in scan.blind_spots] == [str(tmp_path / "gone")]


def test_scan_tree_reports_a_folder_that_vanished_between_listing_and_walking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "t.txt").write_text("env01-w001-r0001-deadbeef")
    real = os.scandir
    done: list[bool] = []

    @contextlib.contextmanager
    def list_then_remove(target: Any) -> Any:
        with real(target) as it:
            entries = list(it)
        if not done:  # the root's listing is read, then its folder goes
            done.append(True)
            shutil.rmtree(tmp_path / "a")
        yield iter(entries)

    monkeypatch.setattr(tree_scan.os, "scandir", list_then_remove)
    scan = tree_scan.scan_tree(tmp_path)
    monkeypatch.undo()

    assert scan.hits == []
    assert [(e.path, e.vanished) for e in scan.errors] == [(str(tmp_path / "a"), True)]


def test_scan_tree_never_follows_symlinks(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "t.txt").write_text("env01-w001-r0001-deadbeef")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "dir-link").symlink_to(outside)
    (tree / "file-link").symlink_to(outside / "t.txt")
    assert tree_scan.scan_tree(tree).hits == []


FOREIGN = "env02-w001-r0001-0badf00d"


def _swap_after_listing(
    monkeypatch: pytest.MonkeyPatch, root: Path, swap: Callable[[], None]
) -> None:
    """Run ``swap`` once the root's listing is read and before anything in it is opened:
    the environment racing the sweep, at the worst moment."""
    real = os.scandir
    done: list[bool] = []

    @contextlib.contextmanager
    def list_then_swap(target: Any) -> Any:
        with real(target) as it:
            entries = list(it)
        if not done:
            done.append(True)
            swap()
        yield iter(entries)

    monkeypatch.setattr(tree_scan.os, "scandir", list_then_swap)


def _foreign(tmp_path: Path) -> Path:
    other = tmp_path / "env02-home"
    other.mkdir()
    (other / "secret.txt").write_text(FOREIGN)
    return other


def test_a_file_swapped_for_a_link_after_the_listing_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = _foreign(tmp_path)
    home = tmp_path / "env01-home"
    home.mkdir()
    (home / "notes.txt").write_text("nothing here")

    def swap() -> None:
        (home / "notes.txt").unlink()
        (home / "notes.txt").symlink_to(other / "secret.txt")

    _swap_after_listing(monkeypatch, home, swap)
    scan = tree_scan.scan_tree(home)

    assert scan.hits == []
    assert [(e.path, e.vanished) for e in scan.errors] == [(str(home / "notes.txt"), True)]


def test_a_folder_swapped_for_a_link_after_the_listing_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = _foreign(tmp_path)
    home = tmp_path / "env01-home"
    (home / "docs").mkdir(parents=True)

    def swap() -> None:
        (home / "docs").rmdir()
        (home / "docs").symlink_to(other)

    _swap_after_listing(monkeypatch, home, swap)
    scan = tree_scan.scan_tree(home)

    assert scan.hits == []
    assert [e.vanished for e in scan.errors] == [True]


def test_a_file_swapped_for_a_fifo_after_the_listing_is_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "env01-home"
    home.mkdir()
    (home / "notes.txt").write_text("nothing here")

    def swap() -> None:
        (home / "notes.txt").unlink()
        os.mkfifo(home / "notes.txt")  # no writer: a plain open would wait forever

    _swap_after_listing(monkeypatch, home, swap)
    started = time.monotonic()
    scan = tree_scan.scan_tree(home)

    assert time.monotonic() - started < 5
    assert scan.hits == [] and [e.vanished for e in scan.errors] == [True]


def test_a_root_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    other = _foreign(tmp_path)
    (tmp_path / "home").symlink_to(other)

    scan = tree_scan.scan_tree(tmp_path / "home")

    assert scan.hits == []
    assert scan.blind_spots and "link" in scan.blind_spots[0].reason


def test_an_environment_racing_the_sweep_never_gets_a_foreign_token_read(
    tmp_path: Path,
) -> None:
    # The attack as an environment runs it: an entry of its home flipped between a file,
    # a link to another environment's home, a link to its secret and a FIFO, as fast as
    # it can, while the sweep runs again and again.
    other = _foreign(tmp_path)
    home = tmp_path / "env01-home"
    home.mkdir()
    for i in range(50):
        (home / f"f{i}.txt").write_text("x" * 100)
    stop = threading.Event()

    def flip() -> None:
        entry, n = home / "entry", 0
        while not stop.is_set():
            with contextlib.suppress(OSError):
                if entry.is_dir() and not entry.is_symlink():
                    entry.rmdir()
                else:
                    entry.unlink()
            with contextlib.suppress(OSError):
                kind = n % 4
                if kind == 0:
                    entry.write_text("mine")
                elif kind == 1:
                    entry.symlink_to(other)
                elif kind == 2:
                    entry.symlink_to(other / "secret.txt")
                else:
                    os.mkfifo(entry)
            n += 1

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    try:
        for _ in range(40):
            started = time.monotonic()
            scan = tree_scan.scan_tree(home, deadline_s=5.0)
            assert time.monotonic() - started < 6
            assert all(str(h.token) != FOREIGN for h in scan.hits)
            assert not scan.blind_spots, scan.blind_spots
    finally:
        stop.set()
        flipper.join()


def test_a_scan_past_its_deadline_returns_with_a_blind_spot(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as fh:  # sparse: costless on disk, long to read
        fh.truncate(8 << 30)
    (tmp_path / "sub").mkdir()

    started = time.monotonic()
    scan = tree_scan.scan_tree(tmp_path, deadline_s=0.2)

    assert time.monotonic() - started < 3
    assert any("deadline" in e.reason for e in scan.blind_spots)
