"""Writer steps the isolation tests share: clear the open document, save it, and read
the saved file from the host (never through the environment)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from cleanroom.core.odt import OdtError, odt_text
from cleanroom.environments.interface import DOCUMENT, Desktops
from cleanroom.environments.policy.handle import PolicyHandle
from cleanroom.host_files import read_beneath
from cleanroom.lifecycle import wait_until

SAVE_TIMEOUT_S = 20.0
_STABLE_S = 0.5  # a save is finished once the file has not changed for this long


def document_path(pool: Desktops, env: str) -> Path:
    """The environment's Writer document, as the host sees it."""
    return pool.places(env).home / DOCUMENT


def modified_ns(path: Path) -> int:
    """The file's modification time in ns (0 when it does not exist); a link's own."""
    try:
        return os.stat(path, follow_symlinks=False).st_mtime_ns
    except OSError:
        return 0


def read_document(path: Path) -> bytes:
    """The bytes of an environment's document, read beneath its home (`document_path`)
    without following a link the environment left on the way."""
    parts = Path(DOCUMENT).parts
    home = path.parents[len(parts) - 1] if path.parts[-len(parts) :] == parts else path.parent
    return read_beneath(home, path)


def clear_document(handle: PolicyHandle) -> None:
    """Focus Writer and delete everything in the open document."""
    handle.focus(program="writer")
    handle.hotkey("ctrl+a")
    handle.hotkey("delete")


def read_saved(path: Path, since_ns: int, timeout_s: float = SAVE_TIMEOUT_S) -> str | None:
    """The text of ``path`` once a save newer than ``since_ns`` has finished; None if no
    such save arrives in time or the file never parses."""

    def saved_text() -> str | None:
        stamp = modified_ns(path)
        if stamp <= since_ns:
            return None
        time.sleep(_STABLE_S)
        if modified_ns(path) != stamp:
            return None  # still being written, or saved again
        try:
            return odt_text(read_document(path))
        except (OSError, OdtError):
            return None

    return wait_until(saved_text, timeout_s, 0.1)


def read_now(path: Path) -> str | None:
    """The text of ``path`` as it is (None when unreadable)."""
    try:
        return odt_text(read_document(path))
    except (OSError, OdtError):
        return None
