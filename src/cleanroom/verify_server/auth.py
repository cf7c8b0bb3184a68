"""The harness key: created once with owner-only permissions, compared in constant time."""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path


class KeyFileError(RuntimeError):
    """The key file exists but holds no usable key, or cannot be created."""


def load_or_create_key(path: str | Path) -> str:
    """The key stored in ``path``; if the file is missing, create it (mode 0600) with a new key."""
    p = Path(path)
    try:
        # O_EXCL: never overwrite a key another process created a moment ago.
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = p.read_text(encoding="ascii").strip()
        if not key or any(c.isspace() for c in key):
            raise KeyFileError(f"key file {p} is empty or malformed") from None
        return key
    except OSError as exc:
        raise KeyFileError(f"cannot create key file {p}: {exc.strerror or exc}") from exc
    key = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(key + "\n")
    return key


def bearer_matches(authorization: str | None, key: str) -> bool:
    """Whether an ``Authorization`` header carries ``Bearer <key>`` (constant-time compare)."""
    if authorization is None:
        return False
    return hmac.compare_digest(
        authorization.encode("utf-8", "surrogateescape"), f"Bearer {key}".encode()
    )
