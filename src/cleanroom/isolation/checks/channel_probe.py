"""The channels check's probe: run inside an environment, as its user, in its session.

Standard library only (it runs under the environment's own ``python3 -I``, which cannot
import cleanroom). Two modes, each given one JSON argument (see `channels.ProbeConfig`):

``plant``  puts the environment's token everywhere another environment could pick it
           up: System V shared memory, message queues and semaphores, a POSIX message
           queue, a POSIX shared memory file,
           a file in every folder it can write outside its own places, TCP and UDP on
           127.0.0.1 and ::1, an abstract and a path Unix socket, its own command line
           and environment, a folder made through every privilege route (``sudo -n
           mkdir``, ``su`` with the old shared password) in every other environment's
           home, a kernel key in its user keyring that every user may view (or the
           kernel's refusal to make one), an exclusive ``flock`` on a file of the shared
           read-only tree and a stream of opens of the same file for an ``inotify``
           watch to see (the file is the environment's by its index), a font folder
           in its home whose one font name carries the token (for another
           environment's X server to list), the token spelled in the byte ranges of
           open-file-description locks on a file of its home (for ``/proc/locks``),
           an AIO context of a size that is its index, made and ended over and over
           (for the machine's one ``fs.aio-nr``), and a page-cache file of the shared
           tree it keeps evicting (for another that asks whether a page is still
           there; every open of a file or a pty moves the machine's counts, for
           another that reads them); it also tries to reach the harness (a listener on the host's
           loopback, the pool's port, the verify server's keyed routes without a key,
           the run folder, the descriptors and memory of another process of its user,
           as a harness-started program is). It prints one JSON line, then serves its
           sockets until it is ended.
``collect`` looks for tokens in every one of those places and prints one JSON line.
           For the X server's reads it asks its own display's server to add each
           other environment's font folder to its font path and lists the names there;
           its proof that it could see them is the harness's control font folder,
           which every display's server may read (its own home is not in the view of
           a sandboxed server at all).

Every class reports whether it could be tested; a class that could not is ``lost``. A
class whose list this environment's view does not have at all (a masked ``/proc``
file) is ``closed`` for it.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import platform
import pty
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time

PREFIX = "cleanroom-probe-"
SHM_KEY_BASE = 0x43520000
IPC_CREAT, IPC_NOWAIT, IPC_RMID = 0o1000, 0o4000, 0
MSG_COPY = 0o40000
O_CREAT = 0o100
# Every kind of IPC object one environment could share with another.
IPC_KINDS = ("shm", "msg", "sem", "mqueue")
MAX_WALK_DIRS = 20_000
MAX_PLANT_DIRS = 64
OLD_SHARED_PASSWORD = b"password"
SKIP_TREES = ("/proc", "/sys", "/dev/pts")
# The key system calls' numbers (add_key, keyctl) by machine; keys have no libc wrapper.
KEY_CALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}
KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING = -4, -3
KEYCTL_SETPERM, KEYCTL_LINK, KEYCTL_INVALIDATE = 5, 8, 21
KEY_ALL_VIEW = 0x3F3F3F3F  # every right for possessor, user, group and other
EPERM, ENOSYS = 1, 38
REFUSED = "refused"
# How often a planting environment opens its shared file, for another's watch to see,
# and how long a collector watches.
TOUCH_EVERY_S = 0.05
WATCH_FOR_S = 1.0
IN_OPEN, IN_ACCESS, IN_NONBLOCK = 0x20, 0x1, 0o4000
FONT_FOLDER = PREFIX + "fonts"
X_CONNECT_TIMEOUT_S = 5.0
CLOSED = "closed"
# /proc/locks: each byte of the token is one write lock of one byte at
# LOCK_BASE + position * LOCK_STRIDE + byte (never adjacent, so the kernel keeps them apart).
F_OFD_SETLK, F_WRLCK = 37, 1
LOCK_BASE, LOCK_STRIDE, LOCK_MAX_CHARS = 1 << 40, 512, 256
LOCK_FILE = PREFIX + "locks"
# fs.aio-nr: the sum of every AIO context's size on the machine. Each environment makes
# one of AIO_BASE + its index events and ends it again; a step of exactly that size is
# its own (two at once are at least 2 * AIO_BASE, larger than any one).
AIO_CALLS = {"x86_64": (206, 207), "aarch64": (0, 1)}  # io_setup, io_destroy
AIO_BASE = 101
AIO_NR = "/proc/sys/fs/aio-nr"
AIO_HOLD_S = 0.04
AIO_WATCH_S = 1.0
# The page cache: a sender evicts its file every EVICT_EVERY_S; a collector reads a page
# of every file in, waits CACHE_WAIT_S and asks whether it is still there, CACHE_ROUNDS
# times. Timed, a page read in after a wait takes 10-40 us from the cache here (the
# CPU's own caches are cold by then), 80 us to milliseconds from the disk.
EVICT_EVERY_S = 0.005
CACHE_WAIT_S = 0.02
CACHE_ROUNDS = 30
CACHE_SLOWER = 3
CACHE_DISK_NS = 60_000
CACHE_PAGE = 4096
CACHE_FILE_MIN = 4 * CACHE_PAGE
# The machine's exact counts every environment moves: a collector that reads one and
# sees its own opens move it reads every other environment's too (what it opens, and
# by how much the count must rise for it).
PTY_NR, FILE_NR = "/proc/sys/kernel/pty/nr", "/proc/sys/fs/file-nr"
COUNTER_MOVES = {PTY_NR: 4, FILE_NR: 400}
# The descriptors and memory of another process of the same user: pidfd_open,
# pidfd_getfd, process_vm_readv. A sleeping stand-in is always among the targets (a
# program of the desktop may be one the kernel will not let its own user reach).
MAX_PROCESS_TARGETS = 4
STAND_IN_S = 30
# ``ptrace`` (seizing, which stops nothing) is tried on the stand-in only.
PROCESS_CALLS = {"x86_64": (434, 438, 310, 101), "aarch64": (434, 438, 270, 117)}
PTRACE_SEIZE = 0x4206
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p


def _own_places(cfg: dict) -> list[str]:
    return [p for p in (cfg.get("home"), cfg.get("runtime_dir")) if p]


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def writable_mounts() -> list[str]:
    """Mount points this process sees mounted read-write (a folder on a read-only mount
    cannot take a file, whatever its mode says)."""
    points = []
    try:
        with open("/proc/self/mountinfo") as info:
            for line in info:
                fields = line.split()
                point = fields[4].encode().decode("unicode_escape")
                if "rw" in fields[5].split(","):
                    points.append(point)
    except OSError:
        return ["/"]
    return points


def writable_dirs(cfg: dict) -> list[str]:
    """Folders this user can write outside its own places: a bounded walk of every
    read-write mount."""
    own = _own_places(cfg)
    skip = [*SKIP_TREES, *own]
    found: list[str] = []
    seen = 0
    stack = sorted(set(writable_mounts()), reverse=True)
    visited: set[str] = set()
    while stack and seen < MAX_WALK_DIRS:
        top = stack.pop()
        if top in visited or _under(top, skip):
            continue
        visited.add(top)
        seen += 1
        # A mount point may be a file (the display's socket bound in): not a folder.
        if top != "/" and os.path.isdir(top) and os.access(top, os.W_OK | os.X_OK):
            found.append(top)
        try:
            with os.scandir(top) as entries:
                for e in entries:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                    except OSError:
                        continue
        except OSError:
            continue
    return found


# -- plant ------------------------------------------------------------------------------


def _serve_tcp(family: int, host: str, port: int, token: bytes) -> socket.socket:
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(16)
    return s


def _serve_forever(listeners: list[socket.socket], udp: list[socket.socket], token: bytes) -> None:
    while True:
        ready, _, _ = select.select(listeners + udp, [], [], 1.0)
        for s in ready:
            try:
                if s in udp:
                    _, addr = s.recvfrom(64)
                    s.sendto(token, addr)
                else:
                    conn, _ = s.accept()
                    conn.sendall(token)
                    conn.close()
            except OSError:
                continue


def _sysv_plant(index: int, token: bytes) -> dict:
    key = SHM_KEY_BASE + index
    out = {}
    shmid = _libc.shmget(key, 4096, IPC_CREAT | 0o666)
    if shmid >= 0:
        addr = _libc.shmat(shmid, None, 0)
        if addr not in (None, ctypes.c_void_p(-1).value):
            ctypes.memmove(addr, token, len(token))
            _libc.shmdt(ctypes.c_void_p(addr))
            out["shm"] = shmid
    msqid = _libc.msgget(key, IPC_CREAT | 0o666)
    if msqid >= 0:
        buf = ctypes.create_string_buffer(8 + len(token))
        ctypes.memmove(ctypes.addressof(buf), (1).to_bytes(8, "little"), 8)
        ctypes.memmove(ctypes.addressof(buf) + 8, token, len(token))
        if _libc.msgsnd(msqid, buf, len(token), IPC_NOWAIT) == 0:
            out["msg"] = msqid
    semid = _libc.semget(key, 1, IPC_CREAT | 0o666)
    if semid >= 0:
        out["sem"] = semid
    mq = _libc.mq_open(_mq_name(index).encode(), O_CREAT | os.O_RDWR, 0o666, None)
    if mq >= 0:
        out["mqueue"] = mq
    return out


def _key_plant(token: bytes) -> tuple[object, int | None]:
    """A key holding the token in this user's keyring, viewable by every user: True and
    its id, ``REFUSED`` when the kernel refuses key calls (the sandbox's filter), or why
    not."""
    calls = KEY_CALLS.get(platform.machine())
    if calls is None:
        return f"no key system call numbers for {platform.machine()}", None
    add_key, keyctl = calls
    description = PREFIX.encode() + token
    # The user keyring linked into the session's: a key in it is then this process's own
    # (possessed), so it may give every user the right to view it.
    _libc.syscall(keyctl, KEYCTL_LINK, KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING)
    key = _libc.syscall(add_key, b"user", description, token, len(token), KEY_SPEC_USER_KEYRING)
    if key < 0:
        err = ctypes.get_errno()
        return (REFUSED if err in (EPERM, ENOSYS) else f"add_key: {os.strerror(err)}"), None
    _libc.syscall(keyctl, KEYCTL_SETPERM, key, KEY_ALL_VIEW)
    return True, key


def _key_remove(key: int) -> None:
    calls = KEY_CALLS.get(platform.machine())
    if calls is not None:
        _libc.syscall(calls[1], KEYCTL_INVALIDATE, key)


def shared_files(count: int) -> list[str]:
    """``count`` files of the shared read-only tree every environment sees at the same
    path: the standard library of the Python the probe runs under, one per environment
    by its index."""
    stdlib = os.path.dirname(os.__file__)
    names = sorted(n for n in os.listdir(stdlib) if n.endswith(".py"))
    return [os.path.join(stdlib, n) for n in names[:count]]


def _lock_plant(path: str) -> tuple[object, int | None]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return f"cannot open {path}: {exc}", None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        return f"cannot lock {path}: {exc}", None
    return True, fd


def _locks_plant(home: str, token: str) -> tuple[object, int | None]:
    """The token spelled in the byte ranges of write locks an open file description of
    a file in the home holds (`LOCK_BASE`); True and the descriptor, or why not."""
    path = os.path.join(home, LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        return f"cannot make {path}: {exc}", None
    try:
        for start in lock_starts(token):
            fcntl.fcntl(fd, F_OFD_SETLK, struct.pack("=hh4xqqi4x", F_WRLCK, 0, start, 1, 0))
    except OSError as exc:
        os.close(fd)
        return f"cannot lock {path}: {exc}", None
    return True, fd


def lock_starts(token: str) -> list[int]:
    """Where each one-byte lock spelling ``token`` starts."""
    return [
        LOCK_BASE + at * LOCK_STRIDE + byte
        for at, byte in enumerate(token.encode()[:LOCK_MAX_CHARS])
    ]


def spelled_in_locks(listing: str) -> dict[str, bytes]:
    """What the one-byte locks at `LOCK_BASE` in a ``/proc/locks`` listing spell, per
    file (its device and inode); a waiter's line (``->``) holds nothing."""
    by_file: dict[str, dict[int, int]] = {}
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) < 8 or parts[1] == "->":
            continue
        with contextlib.suppress(ValueError):
            at, byte = divmod(int(parts[-2]) - LOCK_BASE, LOCK_STRIDE)
            if 0 <= at < LOCK_MAX_CHARS and byte < 256:
                by_file.setdefault(parts[-3], {})[at] = byte
    return {
        where: bytes(chars.get(i, 0x3F) for i in range(max(chars) + 1))
        for where, chars in by_file.items()
    }


def _aio_plant(index: int, stop: threading.Event) -> object:
    """Make and end an AIO context of `AIO_BASE` + ``index`` events over and over (in a
    thread until ``stop``): True, ``REFUSED`` when the kernel refuses AIO, or why not."""
    calls = AIO_CALLS.get(platform.machine())
    if calls is None:
        return f"no AIO system call numbers for {platform.machine()}"
    setup, destroy = calls
    ctx = ctypes.c_ulong(0)
    if _libc.syscall(setup, AIO_BASE + index, ctypes.byref(ctx)) < 0:
        err = ctypes.get_errno()
        return REFUSED if err in (EPERM, ENOSYS) else f"io_setup: {os.strerror(err)}"
    _libc.syscall(destroy, ctx)

    def toggle() -> None:
        while not stop.is_set():
            held = ctypes.c_ulong(0)
            if _libc.syscall(setup, AIO_BASE + index, ctypes.byref(held)) == 0:
                stop.wait(AIO_HOLD_S)
                _libc.syscall(destroy, held)
            stop.wait(AIO_HOLD_S)

    threading.Thread(target=toggle, daemon=True).start()
    return True


def cache_files(count: int) -> list[str]:
    """``count`` files of the shared read-only tree, one per environment by its index,
    for the page cache: the last standard library sources of at least `CACHE_FILE_MIN`
    bytes (not the ones `shared_files` gives the locks and watches, which read them)."""
    stdlib = os.path.dirname(os.__file__)
    names = sorted((n for n in os.listdir(stdlib) if n.endswith(".py")), reverse=True)
    out = []
    for name in names:
        path = os.path.join(stdlib, name)
        with contextlib.suppress(OSError):
            if os.stat(path).st_size >= CACHE_FILE_MIN:
                out.append(path)
        if len(out) == count:
            break
    return out


def _evict_plant(path: str, stop: threading.Event) -> object:
    """Evict ``path`` from the page cache every `EVICT_EVERY_S` (in a thread until
    ``stop``): True, ``REFUSED`` when the kernel refuses eviction, or why not."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        return f"cannot open {path}: {exc}"
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError as exc:
        os.close(fd)
        return REFUSED if exc.errno in (EPERM, ENOSYS) else f"posix_fadvise: {exc}"

    def evict() -> None:
        while not stop.wait(EVICT_EVERY_S):
            with contextlib.suppress(OSError):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)

    threading.Thread(target=evict, daemon=True).start()
    return True


def _reach_processes(uid: int) -> str | None:
    """What a copy of another process's descriptor (``pidfd_getfd``) or a read of its
    memory (``process_vm_readv``) showed, for processes of ``uid`` other than this one
    (a stand-in among them), or tracing the stand-in (``ptrace``); None when the kernel
    refused every one."""
    calls = PROCESS_CALLS.get(platform.machine())
    if calls is None:
        return None
    pidfd_open, pidfd_getfd, vm_readv, ptrace = calls
    stand_in = subprocess.Popen(
        [sys.executable, "-I", "-c", f"import time; time.sleep({STAND_IN_S})"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        targets = [stand_in.pid, *_processes_of(uid, {os.getpid(), stand_in.pid})]
        for pid in targets[:MAX_PROCESS_TARGETS]:
            pidfd = _libc.syscall(pidfd_open, pid, 0)
            if pidfd >= 0:
                try:
                    copy = _libc.syscall(pidfd_getfd, pidfd, 0, 0)
                finally:
                    os.close(pidfd)
                if copy >= 0:
                    os.close(copy)
                    return f"pidfd_getfd took descriptor 0 of pid {pid}"
            if _read_memory(vm_readv, pid):
                return f"process_vm_readv read the memory of pid {pid}"
        if _libc.syscall(ptrace, PTRACE_SEIZE, stand_in.pid, None, None) == 0:
            return f"ptrace seized pid {stand_in.pid}"
        return None
    finally:
        stand_in.kill()  # a traced stand-in ends too, and its tracer reaps it
        stand_in.wait()


def _processes_of(uid: int, skip: set[int]) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in skip:
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    out.append(int(entry))
    return sorted(out)


def _read_memory(vm_readv: int, pid: int) -> bool:
    """Whether one byte of ``pid``'s first mapping could be read from here."""
    first = _read_at_most(f"/proc/{pid}/maps", 256).split("-", 1)[0]
    try:
        address = int(first, 16)
    except ValueError:
        return False
    buf = ctypes.create_string_buffer(1)
    local = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), ctypes.c_void_p(1))
    remote = (ctypes.c_void_p * 2)(ctypes.c_void_p(address), ctypes.c_void_p(1))
    return _libc.syscall(vm_readv, pid, local, 1, remote, 1, 0) == 1


def _touch_forever(path: str, stop: threading.Event) -> None:
    while not stop.wait(TOUCH_EVERY_S):
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            with contextlib.suppress(OSError):
                os.read(fd, 1)
            os.close(fd)


def pty_bound() -> int | None:
    """The ``max=`` of this view's ``/dev/pts`` (None: it draws on the kernel's pool
    without a bound of its own)."""
    try:
        with open("/proc/self/mountinfo") as info:
            for line in info:
                fields = line.split()
                if fields[4] == "/dev/pts" and "-" in fields:
                    options = fields[fields.index("-") + 3].split(",")
                    for option in options:
                        if option.startswith("max="):
                            return int(option[4:])
                    return None
    except (OSError, ValueError, IndexError):
        return None
    return None


def limits_seen(home: str, runtime_dir: str, writable: list[str] | None = None) -> dict:
    """What this environment may take, as its own cgroup, tmpfs mounts (its runtime
    folder's among them, and every other place it can write outside its home:
    ``writable``), its home's file system and its pty pool say (None: no limit found,
    or none to read)."""

    def number(path: str) -> int | None:
        text = _read_at_most(path, 64).strip()
        if not text or text == "max":
            return None
        try:
            value = int(text)
        except ValueError:
            return None
        return value if value < 1 << 60 else None  # the kernel's "no limit" is 2**63 - page

    def size(place: str) -> int | None:
        try:
            st = os.statvfs(place)
        except OSError:
            return None
        return st.f_blocks * st.f_frsize

    places = ["/tmp", "/dev/shm", *(writable or [])] + ([runtime_dir] if runtime_dir else [])
    sizes = [size(p) for p in places]
    return {
        "home_bytes": size(home),
        "memory_bytes": number("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
        "pids": number("/sys/fs/cgroup/pids/pids.max"),
        "cpu_shares": number("/sys/fs/cgroup/cpu/cpu.shares")
        or number("/sys/fs/cgroup/cpu,cpuacct/cpu.shares"),
        "tmpfs_bytes": None if None in sizes else max(s for s in sizes if s is not None),
        "ptys": pty_bound(),
    }


def _mq_name(index: int) -> str:
    return f"/{PREFIX}{index}"


def _su_mkdir(user: str, path: str) -> bool:
    """Try ``su`` to another user with the old shared password; True if it worked."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execvp("su", ["su", "-s", "/bin/sh", "-c", f"mkdir -p '{path}'", user])
        finally:
            os._exit(127)  # no su here: the route does not exist
    deadline = time.monotonic() + 4
    sent = False
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    data = os.read(fd, 1024)
                except OSError:
                    break
                if not sent and b"assword" in data:
                    os.write(fd, OLD_SHARED_PASSWORD + b"\n")
                    sent = True
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
        os.close(fd)
    return os.path.isdir(path)


def _control_plane(port: int, keyed_path: str | None) -> str | None:
    """What reaching a harness port showed (None: nothing). With ``keyed_path`` the port
    may be reached (the verify server's pages are forwarded in on purpose) but a route
    that needs the harness key must refuse a request without one."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            if keyed_path is None:
                return f"127.0.0.1:{port} accepted a connection"
            s.settimeout(5)
            s.sendall(f"GET {keyed_path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
            status = s.recv(64).split(b"\r\n")[0].decode("latin-1")
    except OSError:
        return None
    return None if " 401 " in f"{status} " else f"{keyed_path} without a key: {status!r}"


def plant(cfg: dict) -> None:
    me, token = cfg["me"], cfg["token"]
    tok = token.encode()
    index = cfg["envs"].index(me)
    port = cfg["port_base"] + index
    planted: dict[str, object] = {}
    network_errors: list[str] = []
    reached: list[dict] = []
    cleanup: list = []

    ipc = _sysv_plant(index, tok)
    missing = [kind for kind in IPC_KINDS if kind not in ipc]
    planted["ipc"] = not missing or f"could not make {', '.join(missing)}"
    if "shm" in ipc:
        cleanup.append(lambda: _libc.shmctl(ipc["shm"], IPC_RMID, None))
    if "msg" in ipc:
        cleanup.append(lambda: _libc.msgctl(ipc["msg"], IPC_RMID, None))
    if "sem" in ipc:
        cleanup.append(lambda: _libc.semctl(ipc["sem"], 0, IPC_RMID))
    if "mqueue" in ipc:
        cleanup.append(lambda: _libc.mq_unlink(_mq_name(index).encode()))

    files, dirs = [], writable_dirs(cfg)
    for folder in dirs[:MAX_PLANT_DIRS]:
        path = os.path.join(folder, f"{PREFIX}{token}")
        try:
            with open(path, "w") as fh:
                fh.write(token)
            os.chmod(path, 0o644)
            files.append(path)
        except OSError:
            continue

    def remove_files() -> None:
        for path in files:
            with contextlib.suppress(OSError):
                os.unlink(path)

    cleanup.append(remove_files)
    planted["files"] = bool(files) or "no folder outside its own places was writable"
    planted["files_where"] = files

    listeners, udp = [], []
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            listeners.append(_serve_tcp(family, host, port, tok))
            u = socket.socket(family, socket.SOCK_DGRAM)
            u.bind((host, port))
            udp.append(u)
        except OSError as exc:
            network_errors.append(f"{host}: {exc}")
    for name in ("\0" + PREFIX + me, os.path.join(cfg.get("tmp", "/tmp"), PREFIX + me + ".sock")):
        try:
            u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            if not name.startswith("\0") and os.path.exists(name):
                os.unlink(name)
            u.bind(name)
            if not name.startswith("\0"):
                os.chmod(name, 0o777)
            u.listen(16)
            listeners.append(u)
        except OSError as exc:
            network_errors.append(f"unix {name!r}: {exc}")
    planted["network"] = bool(listeners) or "nothing could listen"
    planted["network_errors"] = network_errors

    made = []
    try:  # the collector's own proof that it sees what lands in a home
        os.mkdir(os.path.join(cfg["home"], f"{PREFIX}{token}-self"))
        made.append(("self", me))
    except OSError:
        pass

    def through_privilege(other: str, home: str) -> None:
        target = os.path.join(home, f"{PREFIX}{token}")
        try:
            r = subprocess.run(
                ["sudo", "-n", "mkdir", target], capture_output=True, timeout=10, check=False
            )
            if r.returncode == 0:
                made.append(("sudo", other))
        except (OSError, subprocess.SubprocessError):
            pass  # no sudo here: the route does not exist
        user = cfg["users"].get(other)
        if user and _su_mkdir(user, target + "-su"):
            made.append(("su", other))

    # In parallel: a refused su waits out its failure delay.
    tries = [
        threading.Thread(target=through_privilege, args=(other, home))
        for other, home in cfg["homes"].items()
        if other != me
    ]
    for t in tries:
        t.start()
    for t in tries:
        t.join()
    planted["privilege"] = bool(made) or "not even its own home took a folder"
    planted["privilege_made"] = made

    for port_name, spec in cfg.get("control_ports", {}).items():
        found = _control_plane(int(spec["port"]), spec.get("keyed_path"))
        if found:
            reached.append({"class": "control_plane", "where": f"{port_name} {found}"})
    run_folder = cfg.get("run_folder")
    if run_folder:
        try:
            names = os.listdir(run_folder)
            reached.append({"class": "harness_files", "where": f"{run_folder}: {len(names)} names"})
        except OSError:
            pass

    os.environ["CLEANROOM_PROBE_TOKEN"] = token
    planted["processes"] = True  # this process's command line carries the token
    planted["keys"], key = _key_plant(tok)
    if key is not None:
        cleanup.append(lambda: _key_remove(key))
    mine = shared_files(len(cfg["envs"]))
    if len(mine) > index:
        planted["locks"], held = _lock_plant(mine[index])
        if held is not None:
            cleanup.append(lambda: os.close(held))
        stop_touching = threading.Event()
        threading.Thread(
            target=_touch_forever, args=(mine[index], stop_touching), daemon=True
        ).start()
        cleanup.append(stop_touching.set)
        planted["watches"] = True
    else:
        planted["locks"] = planted["watches"] = "too few shared files to give one to each"
    planted["x_server"] = _font_plant(cfg["home"], token)
    planted["counters"] = True  # every open it makes moves the machine's counts
    planted["proc_locks"], locked = _locks_plant(cfg["home"], token)
    if locked is not None:
        cleanup.append(lambda: os.close(locked))
    stop_kernel_wide = threading.Event()
    cleanup.append(stop_kernel_wide.set)
    planted["aio"] = _aio_plant(index, stop_kernel_wide)
    evicted = cache_files(len(cfg["envs"]))
    if len(evicted) > index:
        planted["page_cache"] = _evict_plant(evicted[index], stop_kernel_wide)
    else:
        planted["page_cache"] = "too few page-cache files to give one to each"
    process = _reach_processes(os.getuid())
    if process:
        reached.append({"class": "harness_programs", "where": process})
    planted["limits_seen"] = limits_seen(cfg["home"], cfg.get("runtime_dir", ""), dirs)
    print(json.dumps({"planted": planted, "reached": reached}), flush=True)

    def end(*_: object) -> None:
        for undo in cleanup:
            with contextlib.suppress(Exception):  # best effort on the way out
                undo()
        os._exit(0)

    signal.signal(signal.SIGTERM, end)
    signal.signal(signal.SIGINT, end)
    threading.Timer(float(cfg.get("hold_s", 120)), end).start()
    _serve_forever(listeners, udp, tok)


def _font_plant(home: str, token: str) -> object:
    """A font folder in the home naming one font (no font file: listing needs none)."""
    folder = os.path.join(home, FONT_FOLDER)
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "fonts.dir"), "w") as fh:
            fh.write(f"1\nprobe.pcf -{PREFIX}{token}-medium-r-normal--0-0-0-0-c-0-iso8859-1\n")
    except OSError as exc:
        return f"cannot write a font folder in the home: {exc}"
    return True


# -- the X protocol, the little of it the X server's reads need --------------------------


class XClient:
    """A connection to the environment's own display (``DISPLAY``, the cookie in
    ``XAUTHORITY``) that sets and lists font paths and lists fonts."""

    def __init__(self) -> None:
        number = os.environ.get("DISPLAY", "").lstrip(":").split(".")[0]
        if not number.isdigit():
            raise OSError(f"no local DISPLAY to ask: {os.environ.get('DISPLAY')!r}")
        name, data = _cookie(os.environ.get("XAUTHORITY", ""), number)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(X_CONNECT_TIMEOUT_S)
        self.sock.connect(f"/tmp/.X11-unix/X{number}")
        setup = struct.pack("<BxHHHHxx", 0x6C, 11, 0, len(name), len(data))
        self.sock.sendall(setup + _padded(name) + _padded(data))
        head = self._exact(8)
        body = self._exact(struct.unpack_from("<H", head, 6)[0] * 4)
        if head[0] != 1:
            raise OSError(f"the X server refused the connection: {body[:80]!r}")

    def _exact(self, size: int) -> bytes:
        out = b""
        while len(out) < size:
            chunk = self.sock.recv(size - len(out))
            if not chunk:
                raise OSError("the X server closed the connection")
            out += chunk
        return out

    def _reply(self) -> tuple[bool, bytes]:
        """The next reply (True, its whole body) or error (False, its 32 bytes)."""
        head = self._exact(32)
        if head[0] == 0:
            return False, head
        if head[0] != 1:  # an event: not asked for, skipped
            return self._reply()
        return True, head + self._exact(struct.unpack_from("<I", head, 4)[0] * 4)

    def font_path(self) -> list[bytes]:
        self.sock.sendall(struct.pack("<BxH", 52, 1))  # GetFontPath
        ok, reply = self._reply()
        if not ok:
            raise OSError("GetFontPath failed")
        return _strings(reply[32:], struct.unpack_from("<H", reply, 8)[0])

    def set_font_path(self, path: list[bytes]) -> bool:
        """Whether the server took ``path`` (it refuses a folder it cannot read)."""
        body = b"".join(bytes([len(p)]) + p for p in path)
        body = _padded(body)
        self.sock.sendall(struct.pack("<BxHHxx", 51, 2 + len(body) // 4, len(path)) + body)
        self.sock.sendall(struct.pack("<BxH", 52, 1))  # GetFontPath: the error comes first
        ok, _ = self._reply()
        if not ok:
            self._reply()  # GetFontPath's own reply
            return False
        return True

    def list_fonts(self, pattern: bytes, most: int = 100) -> list[bytes]:
        body = _padded(pattern)
        self.sock.sendall(struct.pack("<BxHHH", 49, 2 + len(body) // 4, most, len(pattern)) + body)
        ok, reply = self._reply()
        if not ok:
            raise OSError("ListFonts failed")
        return _strings(reply[32:], struct.unpack_from("<H", reply, 8)[0])

    def close(self) -> None:
        self.sock.close()


def _padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def _strings(data: bytes, count: int) -> list[bytes]:
    out, at = [], 0
    for _ in range(count):
        size = data[at]
        out.append(data[at + 1 : at + 1 + size])
        at += 1 + size
    return out


def _cookie(authority: str, number: str) -> tuple[bytes, bytes]:
    """The MIT cookie for display ``number`` in an authority file."""
    with open(authority, "rb") as fh:
        data = fh.read(1 << 20)
    at = 0

    def field() -> bytes:
        nonlocal at
        size = struct.unpack_from(">H", data, at)[0]
        value = data[at + 2 : at + 2 + size]
        at += 2 + size
        return value

    while at + 2 <= len(data):
        at += 2  # the family
        _address, display, name, cookie = field(), field(), field(), field()
        if display.decode(errors="replace") == number and name == b"MIT-MAGIC-COOKIE-1":
            return name, cookie
    raise OSError(f"no cookie for display :{number} in {authority}")


# -- collect ----------------------------------------------------------------------------


def _read_at_most(path: str, limit: int = 4096) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("latin-1")
    except OSError:
        return ""


def _sysv_collect(cfg: dict, found: list, tested: dict) -> None:
    """Every IPC object of a probe this namespace shows; ``ipc`` is tested only if the
    collector saw its own object of every kind."""
    mine = cfg["envs"].index(cfg["me"])
    own: set[str] = set()
    tables = (
        ("shm", "/proc/sysvipc/shm"),
        ("msg", "/proc/sysvipc/msg"),
        ("sem", "/proc/sysvipc/sem"),
    )
    for kind, table in tables:
        try:
            with open(table) as fh:
                lines = fh.read().splitlines()[1:]
        except OSError as exc:
            tested["ipc"] = f"cannot list {table}: {exc}"
            return
        for line in lines:
            fields = line.split()
            key, ident = int(fields[0]), int(fields[1])
            if not SHM_KEY_BASE <= key < SHM_KEY_BASE + 4096:
                continue
            where = f"{kind} key {key:#x}"
            if key - SHM_KEY_BASE == mine:
                own.add(kind)
            found.append({"class": "ipc", "where": where, "key_index": key - SHM_KEY_BASE})
            if kind == "shm":
                addr = _libc.shmat(ident, None, 0o10000)  # SHM_RDONLY
                if addr not in (None, ctypes.c_void_p(-1).value):
                    text = ctypes.string_at(addr, 256).split(b"\0")[0].decode("latin-1")
                    _libc.shmdt(ctypes.c_void_p(addr))
                    _add(found, "ipc", where, text)
            elif kind == "msg":
                buf = ctypes.create_string_buffer(8 + 512)
                n = _libc.msgrcv(ident, buf, 512, 0, IPC_NOWAIT | MSG_COPY)
                if n > 0:
                    _add(found, "ipc", where, buf.raw[8 : 8 + n])
    for index in range(len(cfg["envs"])):
        mq = _libc.mq_open(_mq_name(index).encode(), os.O_RDONLY)
        if mq >= 0:
            _libc.mq_close(mq)
            if index == mine:
                own.add("mqueue")
            where = f"mqueue {_mq_name(index)}"
            found.append({"class": "ipc", "where": where, "key_index": index})
    blind = [kind for kind in IPC_KINDS if kind not in own]
    tested["ipc"] = not blind or f"did not see its own {', '.join(blind)}"


def _add(found: list, cls: str, where: str, text: str | bytes) -> None:
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    found.append({"class": cls, "where": where, "text": text})


def _ask(found: list, family: int, kind: int, address: tuple | str, where: str) -> None:
    """Connect to a probe's socket and keep what it answers (a datagram socket asks first;
    connected, so that nobody there is refused at once)."""
    try:
        with socket.socket(family, kind) as s:
            s.settimeout(1.0 if kind == socket.SOCK_STREAM else 0.5)
            s.connect(address)
            if kind == socket.SOCK_DGRAM:
                s.send(b"?")
            _add(found, "network", where, s.recv(256))
    except OSError:
        pass


def collect(cfg: dict) -> None:
    me = cfg["me"]
    found: list[dict] = []
    tested: dict[str, object] = {}
    _sysv_collect(cfg, found, tested)

    dirs = writable_dirs(cfg)
    for folder in [*dirs, *[d for d in ("/tmp", "/var/tmp", "/dev/shm") if d not in dirs]]:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.startswith(PREFIX):
                path = os.path.join(folder, name)
                found.append({"class": "files", "where": path, "text": name})
                found.append({"class": "files", "where": path, "text": _read_at_most(path)})
    tested["files"] = True
    home = cfg.get("home")
    if home:
        try:
            for name in os.listdir(home):
                if name.startswith(PREFIX):
                    found.append(
                        {"class": "privilege", "where": os.path.join(home, name), "text": name}
                    )
            tested["privilege"] = True
        except OSError as exc:
            tested["privilege"] = f"cannot list the home: {exc}"

    for other in cfg["envs"]:
        port = cfg["port_base"] + cfg["envs"].index(other)
        for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            _ask(found, family, socket.SOCK_STREAM, (host, port), f"tcp {host}:{port}")
            _ask(found, family, socket.SOCK_DGRAM, (host, port), f"udp {host}:{port}")
        for name in ("\0" + PREFIX + other, os.path.join("/tmp", PREFIX + other + ".sock")):
            _ask(found, socket.AF_UNIX, socket.SOCK_STREAM, name, f"unix {name!r}")
    tested["network"] = True

    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        for part in ("cmdline", "environ"):
            text = _read_at_most(f"/proc/{entry}/{part}", 65536)
            if PREFIX in text or "CLEANROOM_PROBE_TOKEN" in text:
                found.append(
                    {
                        "class": "processes",
                        "where": f"/proc/{entry}/{part}",
                        "text": text.replace("\0", " "),
                    }
                )
    tested["processes"] = True

    try:  # every key this user may view, whoever's keyring holds it
        with open("/proc/keys") as keys:
            for line in keys:
                if PREFIX in line:
                    found.append({"class": "keys", "where": "/proc/keys", "text": line.strip()})
        tested["keys"] = True
    except OSError as exc:
        tested["keys"] = f"cannot read /proc/keys: {exc}"

    # Watches before locks: trying a lock opens the file, which a watch would see.
    files = shared_files(len(cfg["envs"]))
    _watch_collect(files, found, tested)
    _lock_collect(files, found, tested)
    _font_collect(cfg, found, tested)
    _proc_locks_collect(found, tested)
    _aio_collect(len(cfg["envs"]), found, tested)
    _cache_collect(cache_files(len(cfg["envs"]) + 1), found, tested)  # and a control
    _counters_collect(len(cfg["envs"]), found, tested)

    print(json.dumps({"me": me, "found": found, "tested": tested}), flush=True)


def _watch_collect(files: list[str], found: list, tested: dict) -> None:
    """Watch every environment's shared file for a while: an open seen on one is that
    environment's activity reaching this one's view of the file."""
    fd = _libc.inotify_init1(IN_NONBLOCK)
    if fd < 0:
        tested["watches"] = f"inotify_init1 failed: {os.strerror(ctypes.get_errno())}"
        return
    try:
        by_wd = {}
        for index, path in enumerate(files):
            wd = _libc.inotify_add_watch(fd, path.encode(), IN_OPEN | IN_ACCESS)
            if wd >= 0:
                by_wd[wd] = index
        if len(by_wd) < len(files):
            tested["watches"] = "could not watch every shared file"
            return
        seen: set[int] = set()
        deadline = time.monotonic() + WATCH_FOR_S
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                break
            with contextlib.suppress(BlockingIOError):
                data = os.read(fd, 65536)
                offset = 0
                while offset + 16 <= len(data):
                    wd, _mask, _cookie, size = struct.unpack_from("iIII", data, offset)
                    offset += 16 + size
                    if wd in by_wd:
                        seen.add(by_wd[wd])
        for index in sorted(seen):
            where = f"inotify on {files[index]}"
            found.append({"class": "watches", "where": where, "key_index": index})
        tested["watches"] = True
    finally:
        os.close(fd)


def _lock_collect(files: list[str], found: list, tested: dict) -> None:
    """Try each environment's shared file for an exclusive lock: one already taken was
    taken by that environment, on an inode this one shares."""
    for index, path in enumerate(files):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            tested["locks"] = f"cannot open {path}: {exc}"
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            found.append({"class": "locks", "where": f"flock on {path}", "key_index": index})
        except OSError as exc:
            tested["locks"] = f"cannot try a lock on {path}: {exc}"
            return
        finally:
            os.close(fd)  # closing the description drops a lock this try took
    tested["locks"] = True


def _masked(path: str) -> bool | None:
    """True when ``path`` is not in this view (masked by an empty device, or absent);
    None when it cannot be told."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return None


def _proc_locks_collect(found: list, tested: dict) -> None:
    """Every run of one-byte write locks at `LOCK_BASE` in ``/proc/locks``, read back as
    text per file (the file's device and inode)."""
    masked = _masked("/proc/locks")
    if masked is not False:
        tested["proc_locks"] = CLOSED if masked else "cannot tell what /proc/locks is"
        return
    for where, spelled in spelled_in_locks(_read_at_most("/proc/locks", 16 << 20)).items():
        _add(found, "proc_locks", f"/proc/locks on {where}", spelled)
    tested["proc_locks"] = True


def _aio_collect(count: int, found: list, tested: dict) -> None:
    """Watch ``fs.aio-nr`` for `AIO_WATCH_S`: a step of exactly `AIO_BASE` + i is
    environment i's context made or ended."""
    masked = _masked(AIO_NR)
    if masked is not False:
        tested["aio"] = CLOSED if masked else f"cannot tell what {AIO_NR} is"
        return
    seen: set[int] = set()
    try:
        fd = os.open(AIO_NR, os.O_RDONLY)
    except OSError as exc:
        tested["aio"] = f"cannot open {AIO_NR}: {exc}"
        return
    try:
        last = None
        deadline = time.monotonic() + AIO_WATCH_S
        while time.monotonic() < deadline:
            value = int(os.pread(fd, 64, 0) or b"0")
            if last is not None:
                seen |= aio_senders(value - last, count)
            last = value
            time.sleep(0.001)
    except (OSError, ValueError) as exc:
        tested["aio"] = f"cannot read {AIO_NR}: {exc}"
        return
    finally:
        os.close(fd)
    for index in sorted(seen):
        where = f"{AIO_NR} steps of {AIO_BASE + index}"
        found.append({"class": "aio", "where": where, "key_index": index})
    tested["aio"] = True


def _counters_collect(count: int, found: list, tested: dict) -> None:
    """Whether this view reads any of the machine's counts (`COUNTER_MOVES`) that its
    own opens move: one that it does carries every environment's opens to it, so each
    environment (by index, its own among them) is found there."""
    seen = 0
    for path, rise in COUNTER_MOVES.items():
        masked = _masked(path)
        if masked is None:
            tested["counters"] = f"cannot tell what {path} is"
            return
        if masked:
            continue
        seen += 1
        if any(_moves(path, rise) for _ in range(3)):
            where = f"{path}, which every environment's opens move"
            found.extend(
                {"class": "counters", "where": where, "key_index": index} for index in range(count)
            )
    tested["counters"] = True if seen else CLOSED


def _moves(path: str, rise: int) -> bool:
    """Whether ``path``'s first number rises by ``rise`` while this process holds that
    many more ptys (``kernel.pty.nr``), or twice as many more open files (``fs.file-nr``,
    a count the kernel keeps only roughly)."""

    def value() -> int:
        return int(_read_at_most(path, 128).split()[0])

    held: list[int] = []
    try:
        before = value()
        for _ in range(rise):
            if path == PTY_NR:
                held.extend(pty.openpty())
            else:
                held.append(os.open(os.devnull, os.O_RDONLY))
                held.append(os.open(os.devnull, os.O_RDONLY))
        return value() - before >= rise
    except (OSError, ValueError, IndexError):
        return False
    finally:
        for fd in held:
            os.close(fd)


def aio_senders(step: int, count: int) -> set[int]:
    """Which environment (by index) one step of ``fs.aio-nr`` is: one whose context is
    exactly that size, or none (another program's, or two at once)."""
    index = abs(step) - AIO_BASE
    return {index} if 0 <= index < count else set()


def _cache_collect(files: list[str], found: list, tested: dict) -> None:
    """Read a page of every environment's page-cache file in, wait, and ask whether it
    is still there, `CACHE_ROUNDS` times. Asked with a read that must not wait (it
    fails when the page is gone), a file gone in at least half the rounds is being
    evicted; where that read is refused, by the time of a plain read: a file whose
    median read is `CACHE_SLOWER` times the control file's (the last of ``files``, which
    no environment evicts) and over `CACHE_DISK_NS` is read from the disk."""
    if len(files) < 2:
        tested["page_cache"] = "too few page-cache files for one each and a control"
        return
    fds: list[int] = []
    try:
        for path in files:
            fds.append(os.open(path, os.O_RDONLY))
    except OSError as exc:
        tested["page_cache"] = f"cannot open a page-cache file: {exc}"
        for fd in fds:
            os.close(fd)
        return
    buf = bytearray(CACHE_PAGE)

    def asked(fd: int) -> int:
        try:
            os.preadv(fd, [buf], CACHE_PAGE, os.RWF_NOWAIT)
        except BlockingIOError:
            return 1
        return 0

    def timed(fd: int) -> int:
        start = time.perf_counter_ns()
        os.pread(fd, CACHE_PAGE, CACHE_PAGE)
        return time.perf_counter_ns() - start

    ask = asked
    try:
        os.pread(fds[0], CACHE_PAGE, CACHE_PAGE)
        asked(fds[0])
    except (OSError, AttributeError):  # refused (the filter), or not on this file system
        ask = timed
    seen: list[list[int]] = [[] for _ in fds]
    try:
        for _ in range(CACHE_ROUNDS):
            for fd in fds:
                os.pread(fd, CACHE_PAGE, CACHE_PAGE)
            time.sleep(CACHE_WAIT_S)
            for index, fd in enumerate(fds):
                seen[index].append(ask(fd))
    except OSError as exc:
        tested["page_cache"] = f"cannot read a page-cache file: {exc}"
        return
    finally:
        for fd in fds:
            os.close(fd)
    for index in evicted(seen, timed=ask is timed):
        how = f"median read {_median(seen[index]) // 1000} us" if ask is timed else "asked"
        where = f"page cache of {files[index]} ({how}, {CACHE_ROUNDS} rounds)"
        found.append({"class": "page_cache", "where": where, "key_index": index})
    tested["page_cache"] = True


def evicted(seen: list[list[int]], *, timed: bool) -> list[int]:
    """Which files (by index, the last one the control) were evicted between the
    rounds: ``seen`` holds per file either 1 or 0 per round (gone or not, asked), or
    each round's read time in nanoseconds (``timed``)."""
    if not timed:
        return [i for i, rounds in enumerate(seen[:-1]) if 2 * sum(rounds) >= len(rounds)]
    bar = max(CACHE_SLOWER * _median(seen[-1]), CACHE_DISK_NS)
    return [i for i, rounds in enumerate(seen[:-1]) if _median(rounds) > bar]


def _median(values: list[int]) -> int:
    return sorted(values)[len(values) // 2] if values else 0


def _font_collect(cfg: dict, found: list, tested: dict) -> None:
    """Ask this environment's X server to read each other environment's font folder;
    the font names it then lists are what it read there. Its font path is put back."""
    try:
        x = XClient()
    except OSError as exc:
        tested["x_server"] = f"cannot speak to its own X server: {exc}"
        return
    try:
        before = x.font_path()
        control = cfg.get("x_control_fonts", "").encode()
        if not control or not x.set_font_path([control, *before]):
            tested["x_server"] = f"its X server did not take the control font folder {control!r}"
            return
        if not x.list_fonts(cfg.get("x_control_font", "").encode() or b"?"):
            tested["x_server"] = "its X server listed no font of the control folder"
            return
        for other, home in cfg["homes"].items():
            if other == cfg["me"]:
                continue
            folder = os.path.join(home, FONT_FOLDER).encode()
            if x.set_font_path([folder, *before]):
                for name in x.list_fonts(f"*{PREFIX}*".encode()):
                    found.append(
                        {"class": "x_server", "where": f"font path {folder.decode()}",
                         "text": name.decode(errors="replace")}
                    )  # fmt: skip
        x.set_font_path(before)
        tested["x_server"] = True
    except OSError as exc:
        tested["x_server"] = f"the X server's reads could not be tried: {exc}"
    finally:
        x.close()


if __name__ == "__main__":
    mode, config = sys.argv[1], json.loads(sys.argv[2])
    {"plant": plant, "collect": collect}[mode](config)
