"""The first process of an environment's sandbox: it lays out the mounts, then reaps.

Run by `sandbox.Sandbox` as ``unshare --mount --ipc --net --pid --uts --fork
--mount-proc --propagation private python3 -I -S sandbox_init.py PLAN``: it is pid 1 of
the new namespaces and root in them. It carries out the mount plan (a JSON list of steps
that `sandbox.mount_plan` made), brings up the namespace's own loopback, prints
``ready`` and then waits for children until it is ended; when it ends, the kernel ends
every process of the sandbox.

Standard library only, and no import of cleanroom: it starts with ``-I -S`` so that
nothing on a path anyone else controls is read by a root process.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import signal
import socket
import struct
import sys

_libc = ctypes.CDLL(None, use_errno=True)

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MNT_DETACH = 0x2
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
SYS_MOUNT_SETATTR = 442  # x86_64 and arm64 alike
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
            data.encode() if data else None,
        ),
        f"mount {source} on {target}",
    )  # fmt: skip


def _set_readonly(target: str, readonly: bool) -> None:
    """Set or clear the read-only flag on ``target`` and every mount below it."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0) if readonly else _MountAttr(0, MOUNT_ATTR_RDONLY)
    result = _libc.syscall(
        SYS_MOUNT_SETATTR, AT_FDCWD, target.encode(), AT_RECURSIVE, ctypes.byref(attr),
        ctypes.sizeof(attr),
    )  # fmt: skip
    if result == 0:
        return
    if ctypes.get_errno() != errno.ENOSYS:
        _check(result, f"{'read-only' if readonly else 'writable'} {target}")
    # A kernel older than 5.12: remount each mount at or below the target on its own.
    for mount_point in _mounts_under(target):
        flags = MS_REMOUNT | MS_BIND | (MS_RDONLY if readonly else 0)
        _mount("none", mount_point, None, flags)


def _mounts_under(target: str) -> list[str]:
    root = target.rstrip("/") + "/"
    found = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == target or point.startswith(root) or target == "/":
                found.append(point)
    return found


def _make_placeholder(path: str, like: str) -> None:
    """A directory, or an empty file, at ``path`` to mount ``like`` onto."""
    if os.path.isdir(like):
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a"):
            pass


def carry_out(step: list[str]) -> None:
    """One step of the mount plan."""
    op, *args = step
    if op == "tmpfs":
        target, mode = args
        os.makedirs(target, exist_ok=True)
        _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode}")
    elif op == "bind":
        source, target = args
        _make_placeholder(target, source)
        _mount(source, target, None, MS_BIND | MS_REC)
    elif op == "readonly":
        _set_readonly(args[0], True)
    elif op == "writable":
        _set_readonly(args[0], False)
    elif op == "mkdir":
        path, mode = args
        os.makedirs(path, exist_ok=True)
        os.chmod(path, int(mode, 8))
    elif op == "devpts":
        _mount("devpts", "/dev/pts", "devpts", MS_NOSUID, "newinstance,ptmxmode=0666,mode=0620")
        _mount("/dev/pts/ptmx", "/dev/ptmx", None, MS_BIND)
    elif op == "detach":
        _check(_libc.umount2(args[0].encode(), MNT_DETACH), f"detach {args[0]}")
    else:
        raise ValueError(f"unknown sandbox step {op!r}")


def loopback_up() -> None:
    """Bring up ``lo``: the namespace's own loopback, which starts down."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP))


def reap_forever() -> None:
    """Wait for every child (the sandbox's orphans come here) until a signal ends us."""
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    while True:
        try:
            os.wait()
        except ChildProcessError:
            signal.pause()  # no child yet: the next SIGCHLD (or a signal to end) wakes us
        except InterruptedError:
            continue


def main() -> None:
    plan = json.loads(sys.argv[1])
    try:
        for step in plan:
            carry_out(step)
        loopback_up()
    except Exception as exc:
        print(f"failed: {exc}", flush=True)
        os._exit(1)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # so pause() wakes when a child ends
    print("ready", flush=True)
    sys.stdout.close()
    os.close(1)
    reap_forever()


if __name__ == "__main__":
    main()
