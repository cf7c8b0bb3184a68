"""A file a getter brought into the task cache, handed to metrics as plain data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CachedFile:
    """A copy of a guest or downloaded file: where it lives in the cache and its bytes.

    OSWorld hands metrics a path and lets them open it; cleanroom hands them the bytes as
    well, so every metric stays a pure function that tests can call without a disk.
    """

    path: str
    data: bytes

    def text(self) -> str:
        """The content as Python's text-mode ``open().read()`` gives it to OSWorld metrics.

        UTF-8, with universal newlines: ``\\r\\n`` and ``\\r`` become ``\\n``.
        """
        return self.data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
