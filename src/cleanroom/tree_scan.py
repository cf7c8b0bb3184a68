"""The token scanner over files and trees: every token in a file of any size, and in
every regular file under a folder, with every place that could not be read.

The matching itself is pure and lives in `core.tokens` (`scan_bytes`, `scan_spans`); this
module adds the effects: opening and reading files, walking trees, and sharing a tree's
folders and files among worker threads.

What it reads was written by an environment that may race it, so it reads only what it
listed: a tree is walked by folder descriptors (each folder opened relative to its
parent's descriptor, never by a path that could lead elsewhere), every open refuses to
follow a link (``O_NOFOLLOW``) and never waits (``O_NONBLOCK``: a FIFO swapped in opens at
once), and what is opened is read only if it is a regular file (``fstat``). An entry
swapped for a link or a FIFO between the listing and the open is a name whose file is
gone: nothing foreign is read through it. A scan with a deadline stops there, and what
it had not reached is a blind spot, never a hang.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from cleanroom.core.tokens import TOKEN_MAX_LEN, TokenHit, hits_in, scan_spans
from cleanroom.host_files import OPEN_FILE_NOFOLLOW, OPEN_FOLDER_NOFOLLOW

_OVERLAP = TOKEN_MAX_LEN + 1
# Each scanning thread reads into one buffer of this size: a tree's small files back to
# back, matched in one call (a buffer with less room left than `_REFILL` is matched
# before the next file), and a file larger than the buffer streams through it in fills
# of the buffer, so memory stays at one buffer per thread whatever the files' sizes.
_BATCH = 1 << 20
_REFILL = 256 << 10
_FILES_PER_TASK = 32  # a folder's files are shared among the threads in groups this big

# Buffers are kept for the next scan, never freed: a process that scans all the time (a
# sweep before every reset, from many threads) would otherwise leave a freed buffer in
# every thread's malloc arena, and hold on to all of them.
_spare_buffers: list[memoryview] = []
_spare_lock = threading.Lock()


@contextlib.contextmanager
def _buffer(size: int | None = None) -> Iterator[memoryview]:
    """A read buffer of ``size`` bytes (by default the scanner's own size, taken from and
    given back to the kept ones)."""
    if size is not None and size != _BATCH + _OVERLAP + 1:
        yield memoryview(bytearray(size))
        return
    wanted = _BATCH + _OVERLAP + 1
    with _spare_lock:
        buf = _spare_buffers.pop() if _spare_buffers else None
    if buf is None or len(buf) != wanted:
        buf = memoryview(bytearray(wanted))
    try:
        yield buf
    finally:
        with _spare_lock:
            _spare_buffers.append(buf)


# What a scan can hand each regular file to besides the token match: its path, its bytes
# (the first `INSPECT_CAP` of them) and its size. The bytes are the scanner's own buffer:
# a hook that keeps them copies them.
Inspect = Callable[[str, memoryview, int], None]
INSPECT_CAP = 16 << 20


def _head(fd: int, cap: int) -> bytes:
    """The first ``cap`` bytes of the file open on ``fd`` (fewer if it is shorter)."""
    parts: list[bytes] = []
    got = 0
    while got < cap:
        piece = os.pread(fd, min(cap - got, 1 << 20), got)
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return b"".join(parts)


class NotRegular(OSError):
    """What was opened to be scanned is no regular file (a FIFO, a device, a socket)."""


def _open_regular(name: str, dir_fd: int | None = None) -> int:
    """A descriptor of the regular file ``name`` (relative to ``dir_fd``), opened without
    following a link and without waiting; `NotRegular` for anything else."""
    fd = os.open(name, OPEN_FILE_NOFOLLOW, dir_fd=dir_fd)
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegular(errno.EINVAL, "not a regular file", name)
    return fd


def scan_file(path: str | os.PathLike[str], *, chunk_size: int = _BATCH) -> list[TokenHit]:
    """Every token in one regular file, read in chunks so any size of file is fine; a
    link is not followed (`OSError` ELOOP) and anything but a regular file is
    `NotRegular`."""
    if chunk_size <= _OVERLAP:
        raise ValueError(f"chunk_size must be over {_OVERLAP} bytes, got {chunk_size}")
    source = os.fspath(path)
    # A bare descriptor, not a file object: opening a Python file object costs more than
    # reading a small file. Files are read, never mapped: a file that a running program
    # truncates while it is mapped would kill the scanner with SIGBUS.
    fd = _open_regular(source)
    try:
        # The carry-over between chunks is at most _OVERLAP + 1 bytes.
        with _buffer(None if chunk_size == _BATCH else chunk_size + _OVERLAP + 1) as buf:
            return _scan_stream(fd, source, buf, 0)
    finally:
        os.close(fd)


def _scan_stream(
    fd: int, source: str, buf: memoryview, end: int, deadline: float | None = None
) -> list[TokenHit]:
    """Every token in the file open on ``fd``, whose first ``end`` bytes are already in
    ``buf``, filling the buffer before each match.

    Consecutive fills overlap by more than one token, and a match is reported only by
    the fill in which it starts before the overlap, so a token straddling a boundary is
    found exactly once and the look-around at either end always sees real bytes.
    """
    hits: list[TokenHit] = []
    cap = len(buf)
    # buf[:end] holds file bytes from offset base on; matching resumes at buf[pos].
    base, pos = 0, 0
    while True:
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"the deadline passed while reading {source}")
        while end < cap:
            got = os.readv(fd, [buf[end:cap]])
            if not got:
                hits.extend(hits_in(buf[:end], source, base, pos))
                return hits
            end += got
        cut = end - _OVERLAP
        for hit in hits_in(buf[:end], source, base, pos):
            if hit.offset - base >= cut:
                break
            hits.append(hit)
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


class _Folder:
    """An open folder of the tree; its descriptor stays open while a task needs it (its
    listing, its subfolders' opening, its files' reading)."""

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path
        self._refs = 1
        self._lock = threading.Lock()

    def hold(self) -> _Folder:
        with self._lock:
            self._refs += 1
        return self

    def release(self) -> None:
        with self._lock:
            self._refs -= 1
            done = self._refs == 0
        if done:
            os.close(self.fd)


@dataclass(frozen=True)
class _FolderTask:
    """A folder to open (``name`` relative to ``parent``'s descriptor) and list; the root
    comes already open."""

    parent: _Folder | None
    name: str
    path: str
    opened: _Folder | None = None


@dataclass(frozen=True)
class _FilesTask:
    """Files of one open folder to read, by name."""

    folder: _Folder
    names: list[str]


_Task = _FolderTask | _FilesTask


class _Work:
    """A tree's outstanding work, shared by the scanning threads: folders to list and
    groups of files to read. A thread that lists a folder puts its subfolders and its
    files back as work before reading any of them, so an idle thread always has
    something to take while any work is left; the scan is over when nothing is left to
    take and no thread is listing a folder (which could add more), or at the deadline."""

    def __init__(self, root: _Folder, deadline: float | None) -> None:
        self._tasks: list[_Task] = [_FolderTask(None, root.path, root.path, root)]
        self._listing = 0
        self._cond = threading.Condition()
        self.failure: BaseException | None = None
        self.deadline = deadline
        self.expired = False

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def take(self) -> _Task | None:
        """A folder to list or files to read; None once all is done (or the deadline is
        past: what was not taken is dropped, its folders closed)."""
        with self._cond:
            while not self._tasks:
                if self._listing == 0 or self.failure is not None or self.expired:
                    return None
                self._cond.wait(timeout=0.05 if self.deadline is not None else None)
                if self.past_deadline():
                    self.expired = True
            if self.failure is not None or self.expired or self.past_deadline():
                self.expired = self.expired or self.failure is None
                self._drop()
                return None
            task = self._tasks.pop()
            if isinstance(task, _FolderTask):
                self._listing += 1
            return task

    def _drop(self) -> None:
        for task in self._tasks:
            held = task.parent if isinstance(task, _FolderTask) else task.folder
            if isinstance(task, _FolderTask) and task.opened is not None:
                held = task.opened
            if held is not None:
                held.release()
        self._tasks.clear()
        self._cond.notify_all()

    def listed(self, folder: _Folder | None, folders: list[str], files: list[str]) -> None:
        """A folder taken with `take` was listed (or failed to list): here is its work."""
        with self._cond:
            self._listing -= 1
            if folder is not None:
                for name in folders:
                    self._tasks.append(
                        _FolderTask(folder.hold(), name, os.path.join(folder.path, name))
                    )
                for i in range(0, len(files), _FILES_PER_TASK):
                    self._tasks.append(_FilesTask(folder.hold(), files[i : i + _FILES_PER_TASK]))
                folder.release()
            self._cond.notify_all()

    def fail(self, exc: BaseException) -> None:
        """A thread failed outside the errors a scan reports: every thread stops."""
        with self._cond:
            self.failure = self.failure or exc
            self._cond.notify_all()


# What an entry listed as a folder or a file turned into by the time it was opened: its
# file is gone (replaced by a link, a FIFO, a file), so nothing in it can be read any more.
_REPLACED = (errno.ELOOP, errno.ENOTDIR, errno.ENOENT)


@dataclass
class _Reader:
    """One scanning thread: reads small files back to back into its batch buffer and
    matches them in one call, streams a file that outgrows the buffer."""

    hits: list[TokenHit] = field(default_factory=list)
    errors: list[ScanError] = field(default_factory=list)
    inspect: Inspect | None = None

    def __post_init__(self) -> None:
        self._buf = memoryview(b"")
        self._spans: list[tuple[str, int, int]] = []
        self._end = 0

    def run(self, work: _Work) -> None:
        try:
            with _buffer() as self._buf:
                while (task := work.take()) is not None:
                    if isinstance(task, _FolderTask):
                        folder, folders, files = self._list(task)
                        work.listed(folder, folders, files)
                    else:
                        try:
                            for name in task.names:
                                if work.past_deadline():
                                    work.expired = True
                                    break
                                self._read(task.folder, name, work)
                        finally:
                            task.folder.release()
                self._match()
        except BaseException as exc:  # handed to the caller by scan_tree
            work.fail(exc)

    def _open_folder(self, task: _FolderTask) -> _Folder | None:
        if task.opened is not None:
            return task.opened
        assert task.parent is not None  # only the root comes without a parent
        try:
            fd = os.open(task.name, OPEN_FOLDER_NOFOLLOW, dir_fd=task.parent.fd)
        except OSError as exc:
            vanished = exc.errno in _REPLACED
            self.errors.append(ScanError(task.path, exc.strerror or str(exc), vanished))
            return None
        finally:
            task.parent.release()
        return _Folder(fd, task.path)

    def _list(self, task: _FolderTask) -> tuple[_Folder | None, list[str], list[str]]:
        folders: list[str] = []
        files: list[str] = []
        folder = self._open_folder(task)
        if folder is None:
            return None, folders, files
        try:
            with os.scandir(folder.fd) as it:
                entries = list(it)  # a listing that fails half way is an error, not a cut
        except OSError as exc:
            self.errors.append(_scan_error(folder.path, exc))
            folder.release()
            return None, folders, files
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.name)
                elif entry.is_file(follow_symlinks=False):
                    files.append(entry.name)
            except OSError as exc:
                self.errors.append(_scan_error(os.path.join(folder.path, entry.name), exc))
        return folder, folders, files

    def _match(self) -> None:
        self.hits.extend(scan_spans(self._buf, self._spans))
        self._spans, self._end = [], 0

    def _read(self, folder: _Folder, name: str, work: _Work) -> None:
        path = os.path.join(folder.path, name)
        if len(self._buf) - self._end < _REFILL:
            self._match()
        try:
            fd = _open_regular(name, folder.fd)
        except NotRegular:
            self.errors.append(ScanError(path, "replaced by what is no regular file", True))
            return
        except OSError as exc:
            vanished = exc.errno in _REPLACED
            self.errors.append(ScanError(path, exc.strerror or str(exc), vanished))
            return
        buf, start = self._buf, self._end
        end = start
        try:
            while True:
                if end == len(buf):  # it outgrows the batch: match the rest, then stream it
                    self._match()
                    buf[: end - start] = buf[start:end]
                    self.hits.extend(_scan_stream(fd, path, buf, end - start, work.deadline))
                    if self.inspect is not None:
                        head = _head(fd, INSPECT_CAP)
                        self.inspect(path, memoryview(head), os.fstat(fd).st_size)
                    return
                got = os.readv(fd, [buf[end:]])
                if not got:
                    break
                end += got
        except TimeoutError:
            work.expired = True
            self.errors.append(ScanError(path, "the scan's deadline passed while reading it"))
            return
        except OSError as exc:  # what was read of it is dropped with it
            self.errors.append(_scan_error(path, exc))
            return
        finally:
            os.close(fd)
        if end > start:
            if self.inspect is not None:
                self.inspect(path, buf[start:end], end - start)
            self._spans.append((path, start, end))
            self._end = end


def scan_tree(
    root: str | os.PathLike[str],
    *,
    workers: int | None = None,
    deadline_s: float | None = None,
    inspect: Inspect | None = None,
) -> TreeScan:
    """Every token in every regular file under ``root``, in one pass, with every file
    that could not be read and every folder that could not be listed (permission denied,
    vanished mid-walk, a root that is missing) in the result's errors: nothing is
    skipped silently. Links are never followed, the root included, and only regular
    files are read (see the module's text). A root that is a file is a tree of one.

    With ``deadline_s``, the scan returns within about that many seconds (plus one read):
    what it had not reached by then is an error of the root's, a blind spot.

    ``workers`` threads (by default one per core, at most four) list folders and read
    files side by side: listing, reading (system calls) and matching (Hyperscan) all run
    without the interpreter lock. Hits come in order of file and offset, errors in order
    of path, whatever the number of threads.

    ``inspect``, when given, is handed every regular file read (its first `INSPECT_CAP`
    bytes and its size), from the scanning threads, each file once.
    """
    top = os.fspath(root)
    deadline = time.monotonic() + deadline_s if deadline_s is not None else None
    try:
        root_fd = os.open(top, OPEN_FOLDER_NOFOLLOW)
    except NotADirectoryError:
        return _scan_one(top, inspect)
    except OSError as exc:
        reason = "a link, not followed" if exc.errno == errno.ELOOP else None
        return TreeScan(top, [], [ScanError(top, reason or exc.strerror or str(exc))])
    count = workers if workers is not None else min(os.cpu_count() or 1, 4)
    work = _Work(_Folder(root_fd, top), deadline)
    readers = [_Reader(inspect=inspect) for _ in range(max(1, count))]
    threads = [
        threading.Thread(target=r.run, args=(work,), name="token-scan", daemon=True)
        for r in readers[1:]
    ]
    for t in threads:
        t.start()
    readers[0].run(work)  # the calling thread is one of the workers
    for t in threads:
        t.join()
    if work.failure is not None:
        raise work.failure
    hits = sorted((h for r in readers for h in r.hits), key=lambda h: (h.source, h.offset))
    errors = sorted((e for r in readers for e in r.errors), key=lambda e: e.path)
    if work.expired:
        errors.insert(0, ScanError(top, f"the scan's deadline of {deadline_s:g} s passed"))
    return TreeScan(top, hits, errors)


def _scan_one(path: str, inspect: Inspect | None = None) -> TreeScan:
    """A root that is a file: scanned as a tree of one."""
    try:
        hits = scan_file(path)
        if inspect is not None:
            fd = _open_regular(path)
            try:
                inspect(path, memoryview(_head(fd, INSPECT_CAP)), os.fstat(fd).st_size)
            finally:
                os.close(fd)
        return TreeScan(path, hits, [])
    except NotRegular:
        return TreeScan(path, [], [ScanError(path, "not a regular file")])
    except OSError as exc:
        return TreeScan(path, [], [_scan_error(path, exc)])
