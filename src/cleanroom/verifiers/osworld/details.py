"""Shaping getter values and command output into JSON-ready outcome details."""

from __future__ import annotations

import hashlib
from typing import Any

from cleanroom.verifiers.osworld.cached_file import CachedFile

TEXT_LIMIT = 4000


def excerpt(text: str, limit: int = TEXT_LIMIT) -> str:
    """The text, or its head and tail around a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def shape_value(value: Any, limit: int = TEXT_LIMIT) -> Any:
    """A getter's value as details show it: text cut to size, files by path, size and hash."""
    if isinstance(value, CachedFile):
        return {
            "file": value.path,
            "size": len(value.data),
            "sha256": hashlib.sha256(value.data).hexdigest(),
        }
    if isinstance(value, str):
        return excerpt(value, limit)
    if isinstance(value, bytes):
        return excerpt(value.decode("utf-8", errors="replace"), limit)
    if isinstance(value, list | tuple):
        return [shape_value(v, limit) for v in value]
    if isinstance(value, dict):
        return {str(k): shape_value(v, limit) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float):
        return value
    return excerpt(repr(value), limit)
