"""A file a getter brought into the task cache, handed to metrics as plain data."""

from __future__ import annotations

from dataclasses import dataclass


class NotText(ValueError):
    """A metric read a file as text and it is not UTF-8; names the file."""

    def __init__(self, file: CachedFile, exc: UnicodeDecodeError) -> None:
        self.file = file
        super().__init__(f"{file.path} is not UTF-8 text ({exc.reason} at byte {exc.start})")


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
        try:
            text = self.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotText(self, exc) from exc
        return text.replace("\r\n", "\n").replace("\r", "\n")
