"""The system calls no process of an environment may make (a seccomp filter that the
sandbox's runtime loads).

A namespace closes a kernel object only where the kernel has a namespace for it. Some
objects have none, so two sandboxes share them:

- **Kernel keys.** A key in a user's keyring is listed in ``/proc/keys`` to every
  process it grants "view" to, and it outlives every process of its slot, the home wipe
  and the user's removal: it reaches another environment, and a later pool's that gets
  the uid.
- **File system marks and handles**, and root's routes around the sandbox's read-only
  view:
  - a file system's whole superblock watched with fanotify;
  - a file opened by its handle, past the mount view;
  - mounts made or remade read-write by a ``sudo`` inside.
- **Kernel-wide facilities**: BPF programs, performance counters, modules, kexec, swap,
  the clock, reboot.
- **Asynchronous I/O.** Every AIO context counts in the one ``fs.aio-nr`` (an exact
  value every process may read) against the one ``fs.aio-max-nr`` pool: one environment
  could write into the counter for another to read, or take the whole pool so that
  another's programs fail. ``io_uring`` goes with it (a ring reaches the same files with
  none of the calls below checked).
- **The page cache of the shared read-only tree.** Every sandbox's overlay reads the
  host's one copy of a file's pages: evicting a page (``posix_fadvise(DONTNEED)``, or
  ``madvise(MADV_PAGEOUT)`` of a mapping of it) is seen by another that asks whether
  it is still there (a read with ``RWF_NOWAIT`` fails when it is not; ``mincore`` and
  ``cachestat`` say so outright to a root inside). The evicting and the asking calls
  are refused; what remains is timing an ordinary read after one's own memory pressure
  evicted the page, which the sandbox's memory cgroup bounds to its own pages.
- **Other processes' descriptors and memory.** ``pidfd_getfd`` takes a copy of a
  descriptor of another process of the same user (a program the harness started, whose
  output goes to the harness's log on the host's disk), ``ptrace`` and
  ``process_vm_readv``/``writev`` reach into it. No program of a desktop traces another.

Every process of a sandbox runs under a filter that fails these calls with ``EPERM``:
``runc`` loads it (`sandbox_spec.seccomp_profile`) into the sandbox's first process and
into every command ``runc exec`` enters, before the command runs. "No new privileges"
stays off, so a task's ``sudo`` still works, under the same filter (a filter is kept
across every ``exec``). Programs' own use of namespaces (Chromium's sandbox) is
untouched. In ``--containers`` mode, Docker's default seccomp profile, less every call
named here (`containers.seccomp_profile`), forbids the same calls.
"""

from __future__ import annotations

from dataclasses import dataclass

DENIED: tuple[str, ...] = (
    # kernel keys: no namespace of their own
    "add_key",
    "request_key",
    "keyctl",
    # watching or opening past the mount view
    "fanotify_init",
    "open_by_handle_at",
    # mounts: a root inside could remake its read-only view writable
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    # kernel-wide facilities
    "bpf",
    "perf_event_open",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "swapon",
    "swapoff",
    "reboot",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    # asynchronous I/O: one counter and one pool for the whole machine
    "io_setup",
    "io_submit",
    "io_getevents",
    "io_pgetevents",
    "io_cancel",
    "io_destroy",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # asking the page cache whether a page is there
    "mincore",
    "cachestat",
    "process_madvise",  # another's (or its own) pages paged out
    # another process's descriptors and memory
    "pidfd_getfd",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
)


@dataclass(frozen=True)
class ArgumentDenial:
    """A call refused only when one of its arguments says so: ``(argument & mask) ==
    value`` for the argument at ``index`` (as the kernel numbers them on x86-64 and
    arm64; the filter's 32-bit x86 entry has its own numbering, and no 32-bit program
    runs here)."""

    name: str
    index: int
    mask: int
    value: int


POSIX_FADV_DONTNEED = 4
MADV_PAGEOUT = 21
RWF_NOWAIT = 0x8
# The kernel reads these arguments as an ``int``: only the low 32 bits count, so only
# they are compared (set high bits must not slip a call past the rule).
_INT_BITS = 0xFFFF_FFFF
# Evicting a page of the shared tree, and asking whether it is still there without
# reading it in; the same calls with other arguments are every program's ordinary use.
DENIED_WHEN: tuple[ArgumentDenial, ...] = (
    ArgumentDenial("fadvise64", 3, _INT_BITS, POSIX_FADV_DONTNEED),
    ArgumentDenial("madvise", 2, _INT_BITS, MADV_PAGEOUT),
    ArgumentDenial("preadv2", 5, RWF_NOWAIT, RWF_NOWAIT),
)
