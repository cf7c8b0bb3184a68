"""The per-task cache folder: where getters and setup steps put files for metrics.

OSWorld keeps ``cache/<task_id>`` across runs, so a file from an earlier run can be
scored when a later step fails to write it. cleanroom clears the folder before each run.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from cleanroom.verifiers.osworld.cached_file import CachedFile


class CacheNameError(ValueError):
    """A cache file name that would land outside the task's cache folder."""


class TaskCache:
    """One task's cache folder for one run."""

    def __init__(self, root: str | None, task_id: str) -> None:
        # Without a root each run gets its own temporary folder, removed by `discard`.
        self._temp_root = tempfile.mkdtemp(prefix="cleanroom-osworld-") if root is None else None
        base = root if root is not None else self._temp_root
        assert base is not None
        self.dir = os.path.join(os.path.abspath(base), task_id)

    @property
    def kept(self) -> bool:
        """Whether the folder outlives the run (a root was chosen) or is temporary."""
        return self._temp_root is None

    def discard(self) -> None:
        """Remove a temporary cache folder; a chosen root is left for inspection."""
        if self._temp_root is not None:
            shutil.rmtree(self._temp_root, ignore_errors=True)
            self._temp_root = None

    def reset(self) -> None:
        """Empty the folder, so nothing from an earlier run can be scored."""
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)

    def path(self, name: str) -> str:
        """The absolute path of a cache file; refuse names escaping the folder."""
        target = os.path.normpath(os.path.join(self.dir, name))
        if not target.startswith(self.dir + os.sep):
            raise CacheNameError(f"cache name {name!r} points outside the task cache")
        return target

    def write(self, name: str, data: bytes) -> CachedFile:
        """Store bytes under ``name`` and return them as a `CachedFile`."""
        target = self.path(name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as fh:
            fh.write(data)
        return CachedFile(target, data)

    def read(self, name: str) -> CachedFile:
        """A cached file; `FileNotFoundError` when nothing wrote it."""
        target = self.path(name)
        with open(target, "rb") as fh:
            return CachedFile(target, fh.read())

    def exists(self, name: str) -> bool:
        """Whether a cache file of that name exists."""
        return os.path.isfile(self.path(name))
