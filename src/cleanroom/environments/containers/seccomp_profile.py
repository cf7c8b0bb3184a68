"""The seccomp profile and masked paths of an environment's container (containers mode).

The base is Docker 20.10's own default profile (a copy ships in ``seccomp/``; the
daemon gives a container exactly that when it is given none). It is an allow-list, and
it allows several calls that `syscall_filter` refuses in a sandbox: every AIO and
``io_uring`` call, ``ptrace`` (on kernels from 4.8), ``mincore``, ``posix_fadvise`` with
any advice and ``preadv2`` with any flags. A container's programs run with no
capabilities, so the entries Docker gives only to ``CAP_SYS_PTRACE`` (``pidfd_getfd``,
``process_vm_readv``) and ``CAP_SYS_ADMIN`` (mounts, ``bpf``) are refused already.

`container_profile` takes every name of `syscall_filter.DENIED` out of the allow-list,
so each falls to the profile's default (EPERM), and lets ``posix_fadvise`` and
``preadv2`` through only with the arguments that neither evict a page nor ask whether
one is there. ``madvise(MADV_PAGEOUT)`` stays allowed: the kernel pages out a file's
pages only for a process that could write the file, and no process of a container is
root or owns a file of the image.

`MASKED_PATHS` is Docker's own list with the kernel's machine-wide ``/proc/locks`` and
``fs.aio-nr`` added (`sandbox_spec.KERNEL_WIDE`).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from cleanroom.environments.session import syscall_filter
from cleanroom.environments.session.sandbox_spec import KERNEL_WIDE

DOCKER_DEFAULT = Path(__file__).with_name("seccomp") / "docker-20.10-default.json"
# Docker 20.10's own masked paths (its ``oci.DefaultSpec``); a container given a list
# of its own gets only that list.
DOCKER_MASKED = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
)
MASKED_PATHS = DOCKER_MASKED + tuple(p for p in KERNEL_WIDE if p not in DOCKER_MASKED)
_INT_BITS = 0xFFFF_FFFF
# The arguments with which a call of `syscall_filter.DENIED_WHEN` stays allowed in an
# allow-list: (argument index, mask, each allowed value of the masked argument).
ALLOWED_WHEN: dict[str, tuple[int, int, tuple[int, ...]]] = {
    # every advice but POSIX_FADV_DONTNEED (4): normal, random, sequential, willneed, noreuse
    "fadvise64": (3, _INT_BITS, (0, 1, 2, 3, 5)),
    # no RWF_NOWAIT
    "preadv2": (5, syscall_filter.RWF_NOWAIT, (0,)),
}


@cache
def docker_default() -> dict[str, Any]:
    """Docker 20.10's default profile, as the daemon has it."""
    loaded: dict[str, Any] = json.loads(DOCKER_DEFAULT.read_text())
    return loaded


def container_profile(base: dict[str, Any]) -> dict[str, Any]:
    """``base`` (Docker's default) without `syscall_filter.DENIED`, and with
    `ALLOWED_WHEN`'s calls allowed only with those arguments."""
    out = copy.deepcopy(base)
    taken = set(syscall_filter.DENIED) | set(ALLOWED_WHEN)
    rules = []
    for rule in out["syscalls"]:
        names = [n for n in rule["names"] if n not in taken]
        if names:
            rules.append(rule | {"names": names})
    for name, (index, mask, values) in ALLOWED_WHEN.items():
        rules += [
            {
                "names": [name],
                "action": "SCMP_ACT_ALLOW",
                "args": [
                    {"index": index, "value": mask, "valueTwo": v, "op": "SCMP_CMP_MASKED_EQ"}
                ],
            }
            for v in values
        ]
    out["syscalls"] = rules
    return out


def security_option() -> str:
    """Docker's ``--security-opt`` value that gives a container `container_profile`."""
    return "seccomp=" + json.dumps(container_profile(docker_default()), separators=(",", ":"))
