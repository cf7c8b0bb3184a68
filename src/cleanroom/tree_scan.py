"""The token scanner over files and trees: every token in a file of any size, and in
every regular file under a folder, with every place that could not be read.

The matching itself is pure and lives in `core.tokens` (`scan_bytes`, `scan_text`); this
module adds the effects: opening and reading files, walking trees, and splitting a large
tree across worker threads.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from cleanroom.core.tokens import TOKEN_MAX_LEN, TokenHit, _hit, _matches

# Each thread reads every file into one reused buffer of this size: memory stays at one
# chunk per thread whatever the files' sizes, and most files fit in a single chunk.
_CHUNK = 1 << 20
PARALLEL_BYTES = 64 << 20  # below this a tree is scanned in the calling process
_PER_FILE_COST = 32 << 10  # a file's system calls cost about as much as reading 32 KiB
_SHARES_PER_WORKER = 4
_OVERLAP = TOKEN_MAX_LEN + 1
_buffers = threading.local()


def _buffer(chunk_size: int) -> memoryview:
    """This thread's read buffer: room for one chunk after the carried-over overlap."""
    size = chunk_size + _OVERLAP + 1  # the carry-over is at most _OVERLAP + 1 bytes
    buf: memoryview | None = getattr(_buffers, "buf", None)
    if buf is None or len(buf) != size:
        buf = memoryview(bytearray(size))
        _buffers.buf = buf
    return buf


def scan_file(path: str | os.PathLike[str], *, chunk_size: int = _CHUNK) -> list[TokenHit]:
    """Every token in one file, read in chunks so any size of file is fine.

    Consecutive chunks overlap by more than one token, and a match is reported only by
    the chunk in which it starts before the overlap, so a token straddling a boundary is
    found exactly once and the look-around at either end always sees real bytes.
    """
    if chunk_size <= _OVERLAP:
        raise ValueError(f"chunk_size must be over {_OVERLAP} bytes, got {chunk_size}")
    source = os.fspath(path)
    # A bare descriptor, not a file object: opening a Python file object costs more than
    # reading a small file. Files are read, never mapped: a file that a running program
    # truncates while it is mapped would kill the scanner with SIGBUS.
    fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return _scan_stream(fd, source, chunk_size)
    finally:
        os.close(fd)


def _scan_stream(fd: int, source: str, chunk_size: int) -> list[TokenHit]:
    hits: list[TokenHit] = []
    buf = _buffer(chunk_size)
    # buf[:end] holds file bytes from offset base on; scanning resumes at buf[pos].
    end, base, pos = 0, 0, 0
    while True:
        # Fill the buffer before scanning, so a file that fits in it (most files) is
        # scanned in one call, once its end of file has been seen.
        full = end + chunk_size
        while end < full:
            got = os.readv(fd, [buf[end:full]])
            if not got:
                hits.extend(_hit(m, source, base) for m in _matches(buf[:end], pos))
                return hits
            end += got
        cut = end - _OVERLAP
        for m in _matches(buf[:end], pos):
            if m.start() >= cut:
                break
            hits.append(_hit(m, source, base))
        keep = cut - 1  # one byte before the cut keeps the glued-word check honest
        buf[: end - keep] = buf[keep:end]
        end, base, pos = end - keep, base + keep, cut - keep


@dataclass(frozen=True)
class ScanError:
    """A file or folder the scanner could not read or list, and why."""

    path: str
    reason: str
    # The entry was gone when the scanner reached it (running programs replace their
    # temporary files all the time): nothing in it can be read any more, by anyone.
    vanished: bool = False

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def _scan_error(path: str, exc: OSError) -> ScanError:
    return ScanError(path, exc.strerror or str(exc), isinstance(exc, FileNotFoundError))


@dataclass
class TreeScan:
    """What a tree scan found, and every place in the tree it could not read.

    A scan is only as complete as its error list is empty: a caller that needs
    completeness turns `blind_spots` into `lost` rows for the rows that relied on the tree.
    """

    root: str
    hits: list[TokenHit]
    errors: list[ScanError]

    @property
    def blind_spots(self) -> list[ScanError]:
        """The errors that leave something unread: all but entries below the root that
        vanished (what vanished can hold no token any more). A missing root is blind."""
        return [e for e in self.errors if not e.vanished or e.path == self.root]


def _sized_files(root: str, errors: list[ScanError]) -> Iterator[tuple[str, int]]:
    """Every regular file under ``root`` with its size, never following symlinks; a folder
    that cannot be listed and an entry that cannot be examined go to ``errors``."""
    stack = [root]
    while stack:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                entries = list(it)  # a listing that fails half way is an error, not a cut
        except NotADirectoryError:
            try:
                yield top, os.stat(top).st_size
            except OSError as exc:
                errors.append(_scan_error(top, exc))
            continue
        except OSError as exc:
            errors.append(_scan_error(top, exc))
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    yield entry.path, entry.stat(follow_symlinks=False).st_size
            except OSError as exc:
                errors.append(_scan_error(entry.path, exc))


def _scan_many(paths: list[str]) -> tuple[list[TokenHit], list[ScanError]]:
    hits: list[TokenHit] = []
    errors: list[ScanError] = []
    for path in paths:
        try:
            hits.extend(scan_file(path))
        except OSError as exc:
            errors.append(_scan_error(path, exc))
    return hits, errors


def scan_tree(root: str | os.PathLike[str], *, workers: int | None = None) -> TreeScan:
    """Every token in every regular file under ``root``, in one pass, with every file
    that could not be read and every folder that could not be listed (permission denied,
    vanished mid-walk, a root that is missing) in the result's errors: nothing is
    skipped silently. A large tree is split across worker threads (``workers``, by
    default one per core once the tree passes `PARALLEL_BYTES`): reading and matching
    run at memory speed, so the per-file system calls are what a second core pays for.
    """
    top = os.fspath(root)
    errors: list[ScanError] = []
    files = list(_sized_files(top, errors))
    if workers is None:
        total = sum(size for _, size in files)
        workers = min(os.cpu_count() or 1, 4) if total >= PARALLEL_BYTES else 1
    if workers <= 1 or len(files) < 2 * workers:
        hits, errs = _scan_many([p for p, _ in files])
    else:
        hits, errs = _scan_parallel(files, workers)
    return TreeScan(top, hits, errors + errs)


def _scan_parallel(
    files: list[tuple[str, int]], workers: int
) -> tuple[list[TokenHit], list[ScanError]]:
    # Deal files largest first to the least-loaded share, then put the hits back in walk
    # order. There are several shares per worker, taken as workers come free: on a busy
    # machine one worker can get less of a core than another, and a fixed split would
    # leave the faster one idle at the end.
    order = {path: i for i, (path, _) in enumerate(files)}
    count = workers * _SHARES_PER_WORKER
    shares: list[list[str]] = [[] for _ in range(count)]
    loads = [0] * count
    for path, size in sorted(files, key=lambda f: -f[1]):
        k = loads.index(min(loads))
        shares[k].append(path)
        loads[k] += size + _PER_FILE_COST
    # Threads, not processes: reading (a system call) and matching (Hyperscan) both run
    # without the interpreter lock, and a thread costs neither a fork nor the copying of
    # its results back; each thread has its own Hyperscan scratch and read buffer.
    with ThreadPoolExecutor(workers, thread_name_prefix="token-scan") as pool:
        results = list(pool.map(_scan_many, shares))
    hits = [h for part, _ in results for h in part]
    hits.sort(key=lambda h: (order[h.source], h.offset))
    return hits, [e for _, part in results for e in part]
