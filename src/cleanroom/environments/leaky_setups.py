"""Leaky setups: pools with one protection removed on purpose, and which resources the
second acting environment borrows from the first under each.

Each isolation test names the leaks it must detect; run against a pool with that leak, it
must report ``cross`` (its per-test positive control), and on the isolated pool ``clean``.

Pure planning: `sharing_for` says, for one `Leak`, what ``env02`` (the taker) shares
with ``env01`` (the donor); the pool and the environment carry it out. Everything not
named stays the taker's own, so each setup removes one protection.

A home, a LibreOffice profile and an ``XDG_RUNTIME_DIR`` are private to the Unix user
that owns them (mode 0700, buses that admit only their owner's uid), so two
environments can share one of them only by running as its owner: under those three
leaks the taker runs as the donor's user, and only the named resource is pointed at the
donor's; its display, clipboard and the other two of the three stay its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Leak(StrEnum):
    """One protection removed between two environments (the first two acting ones)."""

    SHARED_DISPLAY = "shared-display"  # both environments' programs on one X display
    SHARED_PROFILE = "shared-profile"  # one LibreOffice profile for both
    SHARED_RUNTIME_DIR = "shared-runtime-dir"  # one XDG_RUNTIME_DIR: one AT-SPI bus
    SHARED_HOME = "shared-home"  # one Unix home (work tree and preferences)
    SHARED_CLIPBOARD = "shared-clipboard"  # one clipboard owner serving both displays
    OPEN_HOST = "open-host"  # no sandboxes: one IPC, PID, network and /tmp for both
    UNFILTERED = "unfiltered"  # sandboxes without their system call filter
    SHARED_INODES = "shared-inodes"  # sandboxes whose root is the host's own inodes
    UNLIMITED = "unlimited"  # sandboxes without their resource limits
    X_SERVER_OUTSIDE = "x-server-outside"  # displays' servers on the host, as root
    UNMASKED_PROC = "unmasked-proc"  # /proc/locks, fs.aio-nr and the counts listed

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    Leak.SHARED_DISPLAY: "two environments share one X display (one input path, one clipboard)",
    Leak.SHARED_PROFILE: "two environments share one LibreOffice user profile",
    Leak.SHARED_RUNTIME_DIR: "two environments share one XDG_RUNTIME_DIR and so one AT-SPI bus",
    Leak.SHARED_HOME: "two environments share one home folder",
    Leak.SHARED_CLIPBOARD: "one clipboard owner serves both environments' displays",
    Leak.OPEN_HOST: (
        "two environments run without sandboxes (the host's IPC, processes, loopback, "
        "/tmp and file system, sudo mkdir anywhere) and the run folder is readable"
    ),
    Leak.UNFILTERED: (
        "two environments' sandboxes run without their system call filter (kernel keys, "
        "AIO, page-cache eviction, other processes' descriptors, mounts and the other "
        "calls with no namespace of their own are allowed; /proc/keys and fs.aio-nr are "
        "listed again)"
    ),
    Leak.SHARED_INODES: (
        "two environments' sandboxes see the host's own files, not an overlay of their "
        "own (a lock or a watch on a file both see is on one inode)"
    ),
    Leak.UNLIMITED: (
        "two environments' sandboxes run without their limits (memory, processes, CPU "
        "weight, sized tmpfs mounts)"
    ),
    Leak.X_SERVER_OUTSIDE: (
        "two environments' X servers run on the host as root, outside any sandbox (a "
        "client's font path reaches every folder of the host)"
    ),
    Leak.UNMASKED_PROC: (
        "two environments' sandboxes list the kernel's machine-wide /proc/locks, "
        "fs.aio-nr and counts of ptys, files, inodes and dentries (every open file "
        "description's locks, with their byte ranges)"
    ),
}


DONOR = "env01"
TAKER = "env02"


@dataclass(frozen=True)
class Sharing:
    """What the taker borrows from the donor."""

    display: bool = False  # its programs and input go to the donor's X display
    account: bool = False  # it runs as the donor's Unix user
    home: bool = False  # its HOME is the donor's home
    runtime_dir: bool = False  # it joins the donor's XDG_RUNTIME_DIR and session bus
    profile: bool = False  # its Writer starts with the donor's LibreOffice profile
    clipboard_bridge: bool = False  # one owner serves both displays' selections
    # Both donor and taker (and only they) run without sandboxes, as the host was before.
    unsandboxed: bool = False
    # Both run in sandboxes without the system call filter (`syscall_filter`).
    unfiltered: bool = False
    # Both run in sandboxes whose root is the host's file system itself (no overlay).
    shared_inodes: bool = False
    # Both run in sandboxes with no resource limits.
    unlimited: bool = False
    # Both displays' servers run on the host as root (as every display's did before).
    x_outside: bool = False
    # Both run in sandboxes whose /proc lists the kernel's machine-wide locks and counters.
    unmasked_proc: bool = False

    @property
    def any(self) -> bool:
        """Whether anything is shared at all."""
        return any(
            (
                self.display,
                self.account,
                self.home,
                self.runtime_dir,
                self.profile,
                self.clipboard_bridge,
                self.unsandboxed,
                self.unfiltered,
                self.shared_inodes,
                self.unlimited,
                self.x_outside,
                self.unmasked_proc,
            )
        )


_PLANS: dict[Leak, Sharing] = {
    Leak.SHARED_DISPLAY: Sharing(display=True),
    # Writer's single-instance handoff needs both in one sandbox: none for either.
    Leak.SHARED_PROFILE: Sharing(account=True, profile=True, unsandboxed=True),
    # One session bus is one sandbox's: what it starts runs there. None for either.
    Leak.SHARED_RUNTIME_DIR: Sharing(account=True, runtime_dir=True, unsandboxed=True),
    Leak.SHARED_HOME: Sharing(account=True, home=True),
    Leak.SHARED_CLIPBOARD: Sharing(clipboard_bridge=True),
    Leak.OPEN_HOST: Sharing(unsandboxed=True),
    Leak.UNFILTERED: Sharing(unfiltered=True),
    Leak.SHARED_INODES: Sharing(shared_inodes=True),
    Leak.UNLIMITED: Sharing(unlimited=True),
    Leak.X_SERVER_OUTSIDE: Sharing(x_outside=True),
    Leak.UNMASKED_PROC: Sharing(unmasked_proc=True),
}


def sharing_for(leak: Leak | None, env: str) -> Sharing:
    """What ``env`` borrows from the donor under ``leak`` (nothing for any other env)."""
    if leak is None or env != TAKER:
        return Sharing()
    return _PLANS[Leak(leak)]


def donor_gives(leak: Leak | None) -> Sharing:
    """What the donor itself must give up under ``leak`` for the taker to share it (its
    sandbox); nothing that concerns only the taker."""
    plan = _PLANS[Leak(leak)] if leak is not None else Sharing()
    return Sharing(
        unsandboxed=plan.unsandboxed,
        unfiltered=plan.unfiltered,
        shared_inodes=plan.shared_inodes,
        unlimited=plan.unlimited,
        x_outside=plan.x_outside,
        unmasked_proc=plan.unmasked_proc,
    )


def parse_leak(text: str | None) -> Leak | None:
    """A leak kind from its name (``shared-display``); None for no text or ``none``."""
    if text is None or text in ("", "none", "isolated"):
        return None
    try:
        return Leak(text)
    except ValueError:
        known = ", ".join(k.value for k in Leak)
        raise ValueError(f"unknown leak {text!r}; known: {known}") from None
