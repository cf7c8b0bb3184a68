"""Filling a mirror folder with the dataset files a list of tasks fetches.

Each file goes where `mirror.resolve` looks for it (the dataset's path, decoded), and the
folder's index, `MANIFEST_NAME`, records its URL, size and sha256. A file the index lists
with the size it has on disk is not fetched again, and the index is rewritten after every
file, so a fill that was stopped goes on where it stopped. Files are written beneath the
folder without following a link at any step: a link left in the folder is replaced, or
(in a folder's place) makes that file fail, and is never written through.

With no network, a fill can make each missing file instead (`made_files.made_file`: a
small file of the kind its name says, seeded by its URL); the index marks those files as
made, so whoever reads the mirror can say its files are not OSWorld's (`made_files_in`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from cleanroom.host_files import make_folders_beneath, read_beneath, stat_beneath, write_beneath
from cleanroom.verifiers.osworld.download import TASK_FILE_CAP_BYTES, DownloadError, fetch
from cleanroom.verifiers.osworld.made_files import made_file
from cleanroom.verifiers.osworld.mirror import DATASET_URL, BadDatasetPath, dataset_path

MANIFEST_NAME = "cleanroom-mirror.json"
"""The index a filled mirror folder keeps at its top."""

_MANIFEST_CAP = 64 << 20


class FileState(StrEnum):
    """What a fill did with one URL."""

    FETCHED = "fetched"
    MADE = "made"  # made here, not fetched (`made_files`)
    PRESENT = "present"  # listed in the index with the size it has: not fetched again
    FAILED = "failed"


@dataclass(frozen=True)
class ManifestEntry:
    """One file of a mirror folder: the URL it was fetched (or made) for, its size and
    sha256, and whether it was made here rather than fetched."""

    url: str
    size: int
    sha256: str
    made: bool = False


@dataclass(frozen=True)
class FilledFile:
    """One URL of a fill: where it went in the folder, and what happened."""

    url: str
    path: str | None
    state: FileState
    size: int = 0
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record."""
        record: dict[str, Any] = {"url": self.url, "path": self.path, "state": self.state.value}
        if self.state is FileState.FAILED:
            record["why"] = self.why
        else:
            record["size"] = self.size
        return record


@dataclass(frozen=True)
class FillReport:
    """What a fill did, URL by URL."""

    folder: str
    source: str
    files: tuple[FilledFile, ...]

    def count(self, state: FileState) -> int:
        """How many URLs ended in ``state``."""
        return sum(f.state is state for f in self.files)

    @property
    def fetched_bytes(self) -> int:
        """The bytes fetched in this fill."""
        return sum(f.size for f in self.files if f.state is FileState.FETCHED)

    @property
    def made_bytes(self) -> int:
        """The bytes made in this fill."""
        return sum(f.size for f in self.files if f.state is FileState.MADE)

    @property
    def complete(self) -> bool:
        """Whether every URL is in the folder now."""
        return self.count(FileState.FAILED) == 0

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record: the counts and every URL's record."""
        return {
            "folder": self.folder,
            "source": self.source,
            "counts": {s.value: self.count(s) for s in FileState},
            "fetched_bytes": self.fetched_bytes,
            "made_bytes": self.made_bytes,
            "complete": self.complete,
            "files": [f.to_json() for f in self.files],
        }


def read_manifest(folder: Path) -> dict[str, ManifestEntry]:
    """A mirror folder's index by path; empty when there is none or it cannot be read
    (then every file is fetched again, which costs time and nothing else)."""
    try:
        data = json.loads(read_beneath(folder, folder / MANIFEST_NAME, _MANIFEST_CAP))
        files = data["files"]
        return {
            str(path): ManifestEntry(
                str(e["url"]), int(e["size"]), str(e["sha256"]), e.get("made") is True
            )
            for path, e in files.items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def manifest_json(entries: dict[str, ManifestEntry]) -> dict[str, Any]:
    """The index as written: the dataset it mirrors and its files, sorted by path."""
    return {
        "dataset": DATASET_URL,
        "files": {
            path: {
                "url": e.url,
                "size": e.size,
                "sha256": e.sha256,
                **({"made": True} if e.made else {}),
            }
            for path, e in sorted(entries.items())
        },
    }


def _write_manifest(folder: Path, entries: dict[str, ManifestEntry]) -> None:
    """Write the index beside itself and rename it into place, so a stopped fill leaves
    the old index or the new one, never half of one."""
    data = json.dumps(manifest_json(entries), indent=1).encode("utf-8")
    new = folder / (MANIFEST_NAME + ".new")
    write_beneath(folder, new, data, os.getuid(), os.getgid())
    os.replace(new, folder / MANIFEST_NAME)


def _present(folder: Path, path: str, entry: ManifestEntry | None) -> bool:
    seen = stat_beneath(folder, folder / path)
    return (
        entry is not None
        and seen is not None
        and stat.S_ISREG(seen.st_mode)
        and seen.st_size == entry.size
    )


def fill_mirror(
    urls: Iterable[str],
    folder: Path,
    *,
    source: str = DATASET_URL,
    timeout: float = 120.0,
    cap: int = TASK_FILE_CAP_BYTES,
    tries: int = 3,
    make: bool = False,
    saved_as: Mapping[str, tuple[str, ...]] | None = None,
) -> FillReport:
    """Fetch every dataset URL of ``urls`` into ``folder`` (made if missing) from
    ``source`` (the dataset, or another copy serving the same paths), skipping files
    already there; with ``make``, make each missing file here instead of fetching it (of
    the kind its name says, or one of the names in ``saved_as``, by URL).
    Each URL's outcome is in the report, none raises."""
    folder = Path(os.path.abspath(folder))
    folder.mkdir(parents=True, exist_ok=True)
    base = source if source.endswith("/") else source + "/"
    manifest = read_manifest(folder)
    files: list[FilledFile] = []
    for url in dict.fromkeys(urls):
        try:
            path = dataset_path(url)
        except BadDatasetPath as exc:
            files.append(FilledFile(url, None, FileState.FAILED, why=str(exc)))
            continue
        if path is None:
            why = f"not a file of the dataset {DATASET_URL}"
            files.append(FilledFile(url, None, FileState.FAILED, why=why))
            continue
        if _present(folder, path, manifest.get(path)):
            files.append(FilledFile(url, path, FileState.PRESENT, manifest[path].size))
            continue
        try:
            if make:
                data = made_file(path, url, (saved_as or {}).get(url, ()))
            else:
                data = fetch(base + url[len(DATASET_URL) :], timeout=timeout, tries=tries, cap=cap)
            make_folders_beneath(folder, folder / path)
            write_beneath(folder, folder / path, data, os.getuid(), os.getgid())
        except DownloadError as exc:
            files.append(FilledFile(url, path, FileState.FAILED, why=exc.why))
            continue
        except OSError as exc:
            why = f"cannot write {path}: {exc.strerror or exc}"
            files.append(FilledFile(url, path, FileState.FAILED, why=why))
            continue
        digest = hashlib.sha256(data).hexdigest()
        manifest[path] = ManifestEntry(url, len(data), digest, made=make)
        _write_manifest(folder, manifest)
        state = FileState.MADE if make else FileState.FETCHED
        files.append(FilledFile(url, path, state, len(data)))
    return FillReport(str(folder), "made here" if make else base, tuple(files))


def made_files_in(folder: Path) -> int:
    """How many of a mirror folder's files its index marks as made here (0 for a folder
    with no readable index)."""
    return sum(e.made for e in read_manifest(folder).values())


def made_urls(folder: Path) -> frozenset[str]:
    """The URLs whose files a mirror folder's index marks as made here."""
    return frozenset(e.url for e in read_manifest(folder).values() if e.made)
