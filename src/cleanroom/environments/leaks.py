"""Leaky setups: pools with one protection removed on purpose.

Each isolation test names the leaks it must detect; run against a pool with that leak, it
must report ``cross`` (its per-test positive control), and on the isolated pool ``clean``.
"""

from __future__ import annotations

from enum import StrEnum


class Leak(StrEnum):
    """One protection removed between two environments (the first two acting ones)."""

    SHARED_DISPLAY = "shared-display"  # both environments' programs on one X display
    SHARED_PROFILE = "shared-profile"  # one LibreOffice profile for both
    SHARED_RUNTIME_DIR = "shared-runtime-dir"  # one XDG_RUNTIME_DIR: one AT-SPI bus
    SHARED_HOME = "shared-home"  # one Unix home (work tree and preferences)
    SHARED_CLIPBOARD = "shared-clipboard"  # one clipboard owner serving both displays
    OPEN_HOST = "open-host"  # no sandboxes: one IPC, PID, network and /tmp for both

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
}
