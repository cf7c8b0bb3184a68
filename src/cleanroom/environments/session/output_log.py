"""Output of an environment's processes copied into the host's log folders under a cap.

No process of an environment is ever handed a host file as its stdout or stderr: it is
handed a pipe the harness drains (`capped_output`, `capped_pipe`), and the containers
mode's output arrives as a stream the harness copies the same way (`copy_capped`). That
covers the programs, the commands `start_inside` starts (probes, hogs), the display's
server, the sandbox's runtime and first process, and every ``docker exec``; the
containers' own output goes to Docker's ``none`` log driver, never to a file. Whatever
holds a pipe's write end (the process it was handed to, a child, or another process of
the environment that took the descriptor) can write without end, and the harness:

- keeps at most `PROGRAM_LOG_MAX_BYTES` in any one log, then writes one note;
- keeps at most `LOG_FOLDER_MAX_BYTES` in one log folder, counting what it held when
  the harness first wrote to it, its notes, and every byte of logs since replaced (a
  pool has one folder per environment, so the pool's logs never exceed
  ``LOG_FOLDER_MAX_BYTES`` times its folders);
- drops the rest while still draining, so a writer never blocks on a full pipe, and what
  it drops goes from the pipe to ``/dev/null`` in the kernel, never through the
  harness's memory.

A command whose output the harness reads as its answer (`run_inside`) gets a pipe the
same way (`captured_output`): the harness keeps its first `CAPTURED_OUTPUT_MAX_BYTES` in
memory and drains the rest likewise, and waiting for it never outlasts its deadline.

Why a budget per folder kept by the copiers, not a sized file system (a tmpfs) mounted
for the logs: once no process holds a descriptor of a host log, the copiers are the
only writers into the folder, so their shared count bounds it as surely as a file system
would, with no mount to leave behind after a crash, no memory charged to the harness,
and no copy-out at close that a killed harness would never make (the logs it would lose
are those of the crash). The budget is per environment, not one for the pool, so that
an environment that fills its own folder takes no log of another environment's
processes (the isolation probes read theirs).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from cleanroom.core.capped import ByteQuota, CappedBuffer

# The most of a process's output one log on the host keeps (whatever wrote it).
PROGRAM_LOG_MAX_BYTES = 8 << 20
# The most one log folder (an environment's) keeps, notes included, over its life.
LOG_FOLDER_MAX_BYTES = 32 << 20
# The most of a command's output the harness keeps in memory (`run_inside`'s answer).
CAPTURED_OUTPUT_MAX_BYTES = 8 << 20
_CHUNK = 64 << 10
# What one call moves from a pipe to /dev/null once its log takes nothing more.
_DISCARD_CHUNK = 1 << 20
# A folder holding more entries than this is not counted further (a log folder holds tens).
_COUNTED_ENTRIES = 10_000
_LOG_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def dropped_note(cap: int) -> bytes:
    """The line a log ends with once its own cap is reached."""
    return f"\n[cleanroom: output past {cap} bytes of this log was dropped]\n".encode()


def folder_full_note(cap: int) -> bytes:
    """The line a log ends with once its folder's budget is used up."""
    return f"\n[cleanroom: this log folder's {cap} bytes are used up; output dropped]\n".encode()


class LogFolder:
    """The byte budget every log of one folder draws on, shared by their copiers.

    The room for one note that the folder is full is kept aside, for the log that
    finds it full first; a log started in a full folder stays empty."""

    def __init__(self, path: Path, cap: int = LOG_FOLDER_MAX_BYTES) -> None:
        self.path = path
        self.cap = cap
        self.note = folder_full_note(cap)
        self._quota = ByteQuota(max(cap - len(self.note), 0), _bytes_in(path))
        self._noted = False
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        """Bytes counted against the budget so far (but the note kept aside)."""
        return self._quota.used

    def take(self, n: int) -> int:
        """The first bytes of an ``n``-byte write that the folder still has room for."""
        with self._lock:
            return self._quota.take(n)

    def take_whole(self, n: int) -> bool:
        """Whether an ``n``-byte write (a log's note) fits whole; counted if it does."""
        with self._lock:
            if self._quota.cap - self._quota.used < n:
                return False
            self._quota.take(n)
            return True

    def take_full_note(self) -> bytes:
        """The note that the folder is full, for the first log to ask; then nothing."""
        with self._lock:
            noted, self._noted = self._noted, True
            return b"" if noted else self.note


_folders: dict[Path, LogFolder] = {}
_folders_lock = threading.Lock()


def log_folder(path: Path) -> LogFolder:
    """The budget of the log folder ``path`` (one per folder for the process's life)."""
    key = Path(os.path.abspath(path))
    with _folders_lock:
        folder = _folders.get(key)
        if folder is None:
            folder = _folders[key] = LogFolder(key)
        return folder


def _bytes_in(path: Path) -> int:
    # What the folder held before this process wrote to it (a restarted harness's logs).
    total = 0
    with contextlib.suppress(OSError), os.scandir(path) as entries:
        for count, entry in enumerate(entries):
            if count == _COUNTED_ENTRIES:
                break
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    return total


class _CappedLog:
    """One log open for appending, taking from its own cap and its folder's budget."""

    def __init__(self, log: Path, cap: int, folder: LogFolder) -> None:
        self.fd = os.open(log, _LOG_FLAGS, 0o644)
        self.cap = cap
        self.folder = folder
        self.quota = ByteQuota(cap, os.fstat(self.fd).st_size)
        self.dropped = 0
        # A log already full was noted when it filled.
        self.noted = self.quota.used >= cap

    @property
    def full(self) -> bool:
        """Whether nothing more will be written (noted, or no room left at all)."""
        return self.quota.used >= self.cap and self.noted

    def write(self, chunk: bytes) -> None:
        """Append what the log's cap and the folder's budget let through of ``chunk``;
        a log the disk refuses takes nothing more (the stream is still read to its end)."""
        if self.full:
            self.dropped += len(chunk)
            return
        try:
            self._write(chunk)
        except OSError:
            self.noted = True
            self.quota.used = self.cap

    def _write(self, chunk: bytes) -> None:
        granted = self.folder.take(min(len(chunk), self.quota.cap - self.quota.used))
        self.quota.take(granted)
        if granted:
            _write_all(self.fd, chunk[:granted])
        if granted < len(chunk):
            self.drop(len(chunk) - granted)

    def drop(self, n: int) -> None:
        self.dropped += n
        if self.noted:
            return
        self.noted = True
        if self.quota.used < self.cap:  # cut by the folder's budget
            _write_all(self.fd, self.folder.take_full_note())
        elif self.folder.take_whole(len(note := dropped_note(self.cap))):
            _write_all(self.fd, note)
        self.quota.used = self.cap  # nothing more, whatever room the folder finds

    def close(self) -> None:
        os.close(self.fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def copy_capped(
    chunks: Iterable[bytes],
    log: Path,
    cap: int = PROGRAM_LOG_MAX_BYTES,
    folder: LogFolder | None = None,
) -> int:
    """Append ``chunks`` to ``log`` until it holds ``cap`` bytes (counting what it held)
    or its folder's budget is used up, then a note once; read every chunk to the end
    either way (all of them dropped when the log cannot be opened: a link, a missing
    folder). Return the bytes dropped."""
    try:
        out = _CappedLog(log, cap, folder or log_folder(log.parent))
    except OSError:
        return sum(len(chunk) for chunk in chunks)
    try:
        for chunk in chunks:
            out.write(chunk)
        return out.dropped
    finally:
        out.close()


def _reads(fd: int) -> Iterator[bytes]:
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, _CHUNK):
            yield chunk


def _discard(fd: int) -> None:
    # Kernel to kernel: what is dropped never enters the harness's memory.
    try:
        null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        for _ in _reads(fd):
            pass
        return
    try:
        while os.splice(fd, null, _DISCARD_CHUNK):
            pass
    except OSError:
        for _ in _reads(fd):
            pass
    finally:
        os.close(null)


def _drain(fd: int, log: Path, cap: int, folder: LogFolder) -> None:
    try:
        with contextlib.suppress(OSError):
            out = _CappedLog(log, cap, folder)
            try:
                for chunk in _reads(fd):
                    out.write(chunk)
                    if out.full:
                        break
            finally:
                out.close()
        # A log that is full, or cannot be written, still has its pipe drained: its
        # writer never blocks.
        _discard(fd)
    finally:
        os.close(fd)


def capped_pipe(
    log: Path, cap: int = PROGRAM_LOG_MAX_BYTES, folder: LogFolder | None = None
) -> int:
    """A pipe's write end, to hand a process as its stdout and stderr (then close it):
    a thread copies what comes through into ``log`` under ``cap`` and its folder's
    budget until every copy of the write end is closed."""
    folder = folder or log_folder(log.parent)
    read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
    try:
        threading.Thread(
            target=_drain, args=(read_fd, log, cap, folder), name=f"log-{log.name}", daemon=True
        ).start()
    except BaseException:
        os.close(read_fd)
        os.close(write_fd)
        raise
    return write_fd


class Capture:
    """What a pipe carries, read by a thread of its own into memory: its first ``cap``
    bytes kept, the rest drained to ``/dev/null``, until every write end is closed."""

    def __init__(self, read_fd: int, cap: int = CAPTURED_OUTPUT_MAX_BYTES) -> None:
        self._kept = CappedBuffer(cap)
        self._done = threading.Event()
        threading.Thread(target=self._read, args=(read_fd,), name="capture", daemon=True).start()

    def _read(self, fd: int) -> None:
        try:
            for chunk in _reads(fd):
                self._kept.add(chunk)
                if self._kept.full:
                    _discard(fd)
                    break
        finally:
            os.close(fd)
            self._done.set()

    def wait(self, timeout_s: float | None) -> bool:
        """Whether the pipe reached its end (every writer closed it) within ``timeout_s``."""
        return self._done.wait(timeout_s)

    def value(self) -> bytes:
        """The bytes kept so far."""
        return self._kept.value()


@contextlib.contextmanager
def captured_output(cap: int = CAPTURED_OUTPUT_MAX_BYTES) -> Iterator[tuple[int, Capture]]:
    """A pipe's write end to hand a process as its stdout and stderr, closed here once it
    has started, and the `Capture` of what comes through: ``with captured_output() as
    (out, capture): Popen(..., stdout=out, stderr=out)``."""
    read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
    try:
        capture = Capture(read_fd, cap)
    except BaseException:
        os.close(read_fd)
        os.close(write_fd)
        raise
    try:
        yield write_fd, capture
    finally:
        os.close(write_fd)


@contextlib.contextmanager
def capped_output(log: Path | None) -> Iterator[int]:
    """`capped_pipe` for ``log``, closed here once the process that was handed it has
    started (with None, ``/dev/null``): ``with capped_output(log) as out: Popen(...,
    stdout=out, stderr=out)``."""
    if log is None:
        null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        try:
            yield null
        finally:
            os.close(null)
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    out = capped_pipe(log)
    try:
        yield out
    finally:
        os.close(out)
