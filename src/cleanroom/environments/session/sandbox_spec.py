"""What an environment's sandbox is, as the OCI runtime spec ``runc`` carries out (pure).

`runtime_config` makes the container's ``config.json``; `process_config` the
``process.json`` of one command entered into it (``runc exec --process``). Nothing here
touches the machine: `sandbox.Sandbox` writes these files and runs ``runc``.

What the spec gives each environment:

- **Namespaces**: its own IPC, PID, network (its own loopback), mount and UTS.
- **Its own inodes of the whole shared tree.** The root is an overlay of the host's root
  file system with no upper layer (read-only), made for this sandbox alone
  (`SandboxStage.root`): a file two sandboxes both see is two inodes, so a ``flock`` or
  an ``inotify`` watch on it stays in the sandbox that made it. ``/proc``, ``/sys``,
  ``/dev/pts`` and the device nodes are the sandbox's own instances too: ``/dev`` is a
  small tmpfs whose few nodes ``runc`` makes afresh, and only those nodes may be opened
  (the devices cgroup). Every other file system of the host (Docker's, the other
  sandboxes' stages) is not in the view at all.
- **Private, sized places**: ``/tmp``, ``/var/tmp``, ``/dev/shm`` and ``/run/lock`` are
  empty tmpfs mounts of ``tmpfs_mib`` each; the folders that hold every environment's
  homes and runtime folders are covered by an empty one, and only the environment's own
  are bound back, writable; of ``/tmp/.X11-unix`` only its own display's socket is there.
- **A system call filter** (`syscall_filter.DENIED`): no kernel keys, no mounts, no AIO,
  nothing that evicts or asks after the shared page cache, no reaching into another
  process, none of the calls that reach kernel objects no namespace covers.
  ``/proc/keys``, ``/proc/locks`` and ``/proc/sys/fs/aio-nr`` are masked.
- **A pty pool of its own, bounded** (``devpts`` ``max=``): the kernel has one pool for
  every sandbox, so each takes at most its share (`SandboxLimits.ptys`).
- **Resources of its own**: a cgroup per sandbox (memory, with the pages of its tmpfs
  mounts charged there, swap included in the same limit; a pids limit; a CPU weight).
- **Root inside is narrow**: ``sudo`` works (a task's ``sudo mkdir``) with a small set of
  capabilities, and as root it can still write nowhere but the environment's own places.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from cleanroom.environments.interface import SandboxLimits
from cleanroom.environments.session import syscall_filter

# World-writable folders every program expects: each is an empty tmpfs of the sandbox's.
PRIVATE_TMP = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/run/lock"))
X_SOCKET_DIR = Path("/tmp/.X11-unix")
NAMESPACES = ("ipc", "pid", "net", "mount", "uts")
# A display's server keeps the host's process numbering: it names each client by its pid
# (X-Resource, from the socket's credentials), which the harness reads to tell whose
# window is whose, and a server with a PID namespace of its own sees every client as 0.
DISPLAY_NAMESPACES = tuple(n for n in NAMESPACES if n != "pid")
# The sandbox's first process: an init that reaps every orphan, over a child that only
# waits. Ending it (``runc delete --force``) ends everything in the sandbox.
INIT = ("/usr/bin/tini", "-s", "--", "sleep", "infinity")
# What root inside may do: enough for a task's ``sudo mkdir``, ``chown`` and ``kill``;
# nothing that mounts, loads, traces or reaches the network's raw sockets.
ROOT_CAPABILITIES = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_SETFCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_AUDIT_WRITE",
)
# The device nodes of the sandbox's /dev (char devices: name, major, minor).
DEVICES = (
    ("/dev/null", 1, 3),
    ("/dev/zero", 1, 5),
    ("/dev/full", 1, 7),
    ("/dev/random", 1, 8),
    ("/dev/urandom", 1, 9),
    ("/dev/tty", 5, 0),
)
_PTMX = (5, 2)
_PTS_MAJOR = 136
MASKED = ("/proc/keys", "/proc/kcore", "/proc/timer_list", "/proc/sched_debug", "/proc/acpi")
# What the kernel keeps once for the machine and lists to every sandbox: every lock on
# any file (an open file description's lock names no process, so the PID namespace
# hides nothing, and its byte ranges are data), the count of AIO events in use, and the
# machine's exact counts of ptys, open files, inodes and dentries, which one sandbox
# moves at will for another to read.
KERNEL_WIDE = (
    "/proc/locks",
    "/proc/sys/fs/aio-nr",
    "/proc/sys/kernel/pty/nr",
    "/proc/sys/fs/file-nr",
    "/proc/sys/fs/inode-nr",
    "/proc/sys/fs/inode-state",
    "/proc/sys/fs/dentry-state",
)
# Masks that close only what the filter already refuses to make: kernel keys and AIO.
# Without the filter (a leaky setup) they are listed again.
FILTER_MASKED = ("/proc/keys", "/proc/sys/fs/aio-nr")
READ_ONLY_PROC = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
_MIB = 1024 * 1024


class SandboxRuntime(StrEnum):
    """What carries the spec out. ``runc`` (the default) makes namespaces on the host's
    kernel; ``runsc`` (gVisor) runs the sandbox's programs on a kernel of its own, one in
    user space per sandbox, so no object the host's kernel keeps once for the machine
    (its lock list, its AIO and pty pools, its page cache of the shared tree) is there
    to share."""

    RUNC = "runc"
    RUNSC = "runsc"


@dataclass(frozen=True)
class SandboxProtections:
    """Which of the sandbox's protections are on; only a leaky setup turns one off."""

    syscall_filter: bool = True
    own_inodes: bool = True  # the root is an overlay of its own, not the host's inodes
    limits: SandboxLimits | None = field(default_factory=SandboxLimits)
    kernel_wide_masked: bool = True  # `KERNEL_WIDE` masked in its /proc
    runtime: SandboxRuntime = SandboxRuntime.RUNC  # a kernel per sandbox with RUNSC

    def describe(self) -> dict[str, Any]:
        return {
            "runtime": str(self.runtime),
            "syscall_filter": self.syscall_filter,
            "kernel_wide_masked": self.kernel_wide_masked,
            "own_inodes": self.own_inodes,
            "limits": self.limits.describe() if self.limits else None,
        }


@dataclass(frozen=True)
class SandboxLayout:
    """What one sandbox keeps of the host's files.

    ``writable`` are the environment's own folders (home, runtime folder), kept at their
    paths and writable; ``hidden`` are the folders that hold every environment's such
    folders (the pool's homes and runtime folders), covered by an empty one first so
    that only the environment's own are there; ``readable`` are folders of the host's
    other file systems bound in read-only (a display's control fonts).
    """

    writable: tuple[Path, ...]
    hidden: tuple[Path, ...]
    display_number: int | None
    private_tmp: tuple[Path, ...] = PRIVATE_TMP
    readable: tuple[Path, ...] = ()


def mounts(
    layout: SandboxLayout, limits: SandboxLimits | None, socket_folder: Path | None = None
) -> list[dict[str, Any]]:
    """The sandbox's mounts over its read-only root, in the order ``runc`` makes them:
    its own kernel file systems, the private tmpfs mounts, the covers over every
    environment's folders, then the own folders and the display socket back in place.
    With ``socket_folder`` (a folder holding only the display's socket: gVisor binds
    folders and files, not sockets), that folder is the sandbox's socket folder."""
    size = [f"size={limits.tmpfs_mib}m"] if limits else []
    # Its own pty pool, bounded: all of them draw on the kernel's one.
    pts_max = [f"max={limits.ptys}"] if limits else []
    out: list[dict[str, Any]] = [
        _kernel("/proc", "proc", ["nosuid", "noexec", "nodev"]),
        _kernel("/dev", "tmpfs", ["nosuid", "strictatime", "mode=755", "size=1m"]),
        _kernel(
            "/dev/pts",
            "devpts",
            ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", *pts_max],
        ),
        _kernel("/dev/mqueue", "mqueue", ["nosuid", "noexec", "nodev"]),
        _kernel("/sys", "sysfs", ["nosuid", "noexec", "nodev", "ro"]),
        # Its own cgroup, read-only: what it may take is there for it (and a probe) to see.
        _kernel("/sys/fs/cgroup", "cgroup", ["nosuid", "noexec", "nodev", "relatime", "ro"]),
    ]
    for tmp in layout.private_tmp:
        out.append(_tmpfs(tmp, "1777", size))
    for hidden in layout.hidden:
        out.append(_tmpfs(hidden, "0755", ["size=1m"]))
    for own in layout.writable:
        out.append(_bind(own, readonly=False))
    for seen in layout.readable:
        out.append(_bind(seen, readonly=True))
    if layout.display_number is not None and socket_folder is not None:
        out.append(_bind(socket_folder, readonly=False) | {"destination": str(X_SOCKET_DIR)})
    elif layout.display_number is not None:
        socket = X_SOCKET_DIR / f"X{layout.display_number}"
        out.append(_bind(socket, readonly=False))
    return out


def _kernel(target: str, kind: str, options: list[str]) -> dict[str, Any]:
    return {"destination": target, "type": kind, "source": kind, "options": options}


def _tmpfs(target: Path, mode: str, size: list[str]) -> dict[str, Any]:
    return {
        "destination": str(target),
        "type": "tmpfs",
        "source": "tmpfs",
        "options": ["nosuid", "nodev", f"mode={mode}", *size],
    }


def _bind(path: Path, *, readonly: bool) -> dict[str, Any]:
    options = ["rbind", "nosuid", "nodev", "ro" if readonly else "rw", "rprivate"]
    return {"destination": str(path), "type": "bind", "source": str(path), "options": options}


def seccomp_profile() -> dict[str, Any]:
    """`syscall_filter.DENIED` and `syscall_filter.DENIED_WHEN` as an OCI seccomp
    profile: each fails with EPERM."""
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_AARCH64"],
        "syscalls": [
            {"names": list(syscall_filter.DENIED), "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
            *(argument_rule(d) for d in syscall_filter.DENIED_WHEN),
        ],
    }


def argument_rule(denial: syscall_filter.ArgumentDenial) -> dict[str, Any]:
    """One `syscall_filter.ArgumentDenial` as a seccomp rule (OCI's and Docker's form)."""
    return {
        "names": [denial.name],
        "action": "SCMP_ACT_ERRNO",
        "errnoRet": 1,
        "args": [
            {
                "index": denial.index,
                "value": denial.mask,
                "valueTwo": denial.value,
                "op": "SCMP_CMP_MASKED_EQ",
            }
        ],
    }


def masked_paths(protections: SandboxProtections) -> list[str]:
    """What of /proc the sandbox sees as empty: `MASKED`, and `KERNEL_WIDE` unless a
    leaky setup unmasks it; the masks in `FILTER_MASKED` go with the filter."""
    out = list(MASKED)
    if protections.kernel_wide_masked:
        out += [p for p in KERNEL_WIDE if p not in out]
    if not protections.syscall_filter:
        out = [p for p in out if p not in FILTER_MASKED]
    return out


def resources(limits: SandboxLimits | None) -> dict[str, Any]:
    """The cgroup settings: which devices may be opened, and the limits."""
    allowed = [(major, minor) for _, major, minor in DEVICES] + [_PTMX]
    devices: list[dict[str, Any]] = [{"allow": False, "access": "rwm"}]
    devices += [
        {"allow": True, "type": "c", "major": major, "minor": minor, "access": "rwm"}
        for major, minor in allowed
    ]
    devices.append({"allow": True, "type": "c", "major": _PTS_MAJOR, "access": "rwm"})
    out: dict[str, Any] = {"devices": devices}
    if limits is not None:
        memory = limits.memory_mib * _MIB
        out["memory"] = {"limit": memory, "swap": memory}
        out["pids"] = {"limit": limits.pids}
        out["cpu"] = {"shares": limits.cpu_shares}
    return out


def runtime_config(
    *,
    root: Path,
    hostname: str,
    layout: SandboxLayout,
    protections: SandboxProtections,
    cgroup: str,
    namespaces: tuple[str, ...] = NAMESPACES,
    socket_folder: Path | None = None,
) -> dict[str, Any]:
    """The container's ``config.json``: its first process, root, mounts and limits
    (``socket_folder`` as in `mounts`)."""
    linux: dict[str, Any] = {
        "namespaces": [{"type": "network" if n == "net" else n} for n in namespaces],
        "cgroupsPath": cgroup,
        "resources": resources(protections.limits),
        "devices": [
            {"path": path, "type": "c", "major": major, "minor": minor, "fileMode": 0o666}
            | {"uid": 0, "gid": 0}
            for path, major, minor in DEVICES
        ],
        "maskedPaths": masked_paths(protections),
        "readonlyPaths": list(READ_ONLY_PROC),
    }
    if protections.syscall_filter:
        linux["seccomp"] = seccomp_profile()
    return {
        "ociVersion": "1.0.2",
        "process": process_config(list(INIT), 0, 0, "/", {"PATH": "/usr/bin:/bin"}),
        "root": {"path": str(root), "readonly": True},
        "hostname": hostname,
        "mounts": mounts(layout, protections.limits, socket_folder),
        "linux": linux,
    }


def process_config(
    argv: list[str], uid: int, gid: int, cwd: str | Path, env: dict[str, str]
) -> dict[str, Any]:
    """The ``process.json`` of one command run in the sandbox as ``uid``:``gid`` with no
    extra groups. Its capabilities are only a bound: a user's process has none, a
    ``sudo`` inside gets at most `ROOT_CAPABILITIES`, and "no new privileges" is off so
    that ``sudo`` works at all."""
    caps = list(ROOT_CAPABILITIES)
    held = caps if uid == 0 else []
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return {
        "terminal": False,
        "user": {"uid": uid, "gid": gid, "additionalGids": []},
        "args": list(argv),
        "env": [f"{k}={v}" for k, v in env.items()],
        "cwd": str(cwd),
        "capabilities": {
            "bounding": caps,
            "effective": held,
            "permitted": held,
            "inheritable": [],
            "ambient": [],
        },
        "rlimits": [{"type": "RLIMIT_NOFILE", "soft": soft, "hard": hard}],
        "noNewPrivileges": False,
    }
