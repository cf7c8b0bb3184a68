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

Every process of a sandbox runs under a filter that fails these calls with ``EPERM``:
``runc`` loads it (`sandbox_spec.seccomp_profile`) into the sandbox's first process and
into every command ``runc exec`` enters, before the command runs. "No new privileges"
stays off, so a task's ``sudo`` still works, under the same filter (a filter is kept
across every ``exec``). Programs' own use of namespaces (Chromium's sandbox) is
untouched. In ``--containers`` mode, Docker's default seccomp profile forbids the same
calls.
"""

from __future__ import annotations

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
)
