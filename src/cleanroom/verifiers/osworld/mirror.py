"""Where a task file is fetched from: OSWorld's dataset, or a mirror of it.

Every file an OSWorld task downloads (``download`` steps) or compares with (``cloud_file``
getters) lies under one dataset path, `DATASET_URL`. A mirror holds those files under the
same relative paths, either in a folder (the dataset's own layout, decoded: a file of
``.../resolve/main/multi_apps/<id>/Course%20Timetable.xlsx`` is
``<folder>/multi_apps/<id>/Course Timetable.xlsx``) or under another base URL (the same
path, as the task spells it, appended to the base). `resolve` is the one place that turns
a task's URL into where it is fetched from, and `fetch_task_file` fetches it from there.

With a mirror set, a URL the mirror cannot hold (outside the dataset, or escaping it with
``..``), a file the mirror lacks, and a file of a filled mirror folder whose content no
longer has the sha256 its index records are `NotMirrored` errors naming the URL and the
mirror: the infrastructure's fault, so the run is invalid, never a 0.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from cleanroom.host_files import NotARegularFile, read_beneath
from cleanroom.verifiers.osworld.download import DownloadError, fetch
from cleanroom.verifiers.osworld.task import Task

if TYPE_CHECKING:
    from cleanroom.verifiers.osworld.mirror_fill import ManifestEntry

DATASET_URL = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/"
"""The dataset every OSWorld task file is fetched from."""

EMPTY_HISTORY_URL = f"{DATASET_URL}chrome/44ee5668-ecd5-4366-a6ce-c1c9b8d4e938/history_empty.sqlite"
"""The empty Chrome History database an ``update_browse_history`` step fills."""


class NotMirrored(DownloadError):
    """A task URL the mirror does not hold: outside the dataset, a path escaping it, or a
    file missing from it (or not a regular file there). Names the URL and the mirror."""

    def __init__(self, url: str, mirror: Mirror, why: str) -> None:
        self.mirror = mirror
        super().__init__(url, f"{why} (mirror {mirror.location})")


class BadDatasetPath(ValueError):
    """A dataset URL whose path does not name a file inside the dataset (``..``, ``.``,
    an empty or encoded-slash segment, a query or a fragment)."""


@dataclass(frozen=True)
class Mirror:
    """A copy of OSWorld's dataset: a folder, or a base URL serving the same paths."""

    location: str

    @property
    def is_url(self) -> bool:
        """Whether the mirror is a base URL (http or https) rather than a folder."""
        return self.location.startswith(("http://", "https://"))

    @classmethod
    def parse(cls, spec: str) -> Mirror:
        """A mirror from what a user gives: a URL starts with http:// or https://, anything
        else is a folder (made absolute, so a run elsewhere reads the same one)."""
        if not spec:
            raise ValueError("a mirror is a folder or an http(s) URL, got an empty string")
        if spec.startswith(("http://", "https://")):
            return cls(spec if spec.endswith("/") else spec + "/")
        return cls(os.path.abspath(spec))


@dataclass(frozen=True)
class RemoteFile:
    """A file fetched over HTTP(S) from ``url``."""

    url: str


@dataclass(frozen=True)
class FolderFile:
    """A file read from a mirror folder: ``relative`` (POSIX, decoded) beneath ``root``."""

    root: str
    relative: str


Source = RemoteFile | FolderFile


def dataset_path(url: str) -> str | None:
    """The file's path inside the dataset, decoded (``multi_apps/<id>/a b.docx``); None
    for a URL outside the dataset; `BadDatasetPath` for one that escapes it."""
    if not url.startswith(DATASET_URL):
        return None
    raw = url[len(DATASET_URL) :]
    parts = urlsplit(url)
    if parts.query or parts.fragment or "?" in raw or "#" in raw:
        raise BadDatasetPath(f"{url} has a query or a fragment; dataset files have neither")
    segments = [unquote(s) for s in raw.split("/")]
    for segment in segments:
        if segment in ("", ".", "..") or "/" in segment or "\0" in segment:
            raise BadDatasetPath(f"{url} does not name a file inside the dataset ({segment!r})")
    return "/".join(segments)


def resolve(url: str, mirror: Mirror | None) -> Source:
    """Where ``url`` is fetched from: itself without a mirror; the same path in the mirror
    with one (`NotMirrored` when the mirror cannot hold it)."""
    if mirror is None:
        return RemoteFile(url)
    try:
        relative = dataset_path(url)
    except BadDatasetPath as exc:
        raise NotMirrored(url, mirror, str(exc)) from exc
    if relative is None:
        raise NotMirrored(url, mirror, f"not a file of the dataset {DATASET_URL}")
    if mirror.is_url:
        return RemoteFile(mirror.location + url[len(DATASET_URL) :])
    return FolderFile(mirror.location, relative)


def fetch_task_file(
    url: str, mirror: Mirror | None, *, timeout: float, cap: int, tries: int = 1
) -> bytes:
    """The bytes of a task's file, from where `resolve` says, at most ``cap`` of them.

    A file missing from a mirror folder, or there as a link, a FIFO, a device, a folder
    or a file over ``cap``, is `NotMirrored`; a failed fetch is `DownloadError`.
    """
    source = resolve(url, mirror)
    if isinstance(source, FolderFile):
        assert mirror is not None
        root = Path(source.root)
        try:
            data = read_beneath(root, root / source.relative, cap)
        except NotARegularFile as exc:
            raise NotMirrored(url, mirror, f"{source.relative} is {exc.strerror}") from exc
        except FileNotFoundError as exc:
            raise NotMirrored(url, mirror, f"{source.relative} is not in it") from exc
        except OSError as exc:
            raise NotMirrored(url, mirror, f"{source.relative}: {exc.strerror or exc}") from exc
        expected = _indexed_sha256(root, source.relative)
        if expected is not None and hashlib.sha256(data).hexdigest() != expected:
            why = f"{source.relative} no longer has the sha256 the mirror's index records"
            raise NotMirrored(url, mirror, why)
        return data
    try:
        return fetch(source.url, timeout=timeout, tries=tries, cap=cap)
    except DownloadError as exc:
        if mirror is None:
            raise
        raise NotMirrored(url, mirror, f"{source.url}: {exc.why}") from exc


def _indexed_sha256(root: Path, relative: str) -> str | None:
    """The sha256 a filled mirror folder's index records for ``relative``; None for a
    folder with no readable index (one a user made by hand) or a file it does not list."""
    from cleanroom.verifiers.osworld.mirror_fill import MANIFEST_NAME  # it imports this module

    try:
        changed = os.stat(root / MANIFEST_NAME).st_mtime_ns
    except OSError:
        return None
    entry = _index_of(str(root), changed).get(relative)
    return entry.sha256 if entry is not None else None


@functools.lru_cache(maxsize=8)
def _index_of(root: str, changed_ns: int) -> dict[str, ManifestEntry]:
    """A mirror folder's index, read once for each time it was written (``changed_ns``)."""
    from cleanroom.verifiers.osworld.mirror_fill import read_manifest

    return read_manifest(Path(root))


def task_file_urls(task: Task) -> tuple[str, ...]:
    """Every URL the task's ``download`` and ``update_browse_history`` steps (setup and
    postconfig) and ``cloud_file`` getters fetch, in order, each once; a mirror for the
    task holds these."""
    urls: list[str] = []
    for step in task.config + task.evaluator.postconfig:
        if step.type == "update_browse_history":
            urls.append(EMPTY_HISTORY_URL)
        if step.type == "download" and isinstance(step.parameters.get("files"), list):
            urls += [str(f["url"]) for f in step.parameters["files"] if _has_url(f, "url")]
    for getter in task.getters():
        if getter.type == "cloud_file":
            paths = getter.config.get("path")
            listed = paths if isinstance(paths, list) else [paths]
            urls += [str(p) for p in listed if _is_text(p)]
    return tuple(dict.fromkeys(urls))


def task_file_names(task: Task) -> dict[str, tuple[str, ...]]:
    """For each URL the task fetches, the names it saves the file under (a ``download``
    step's path, a ``cloud_file`` getter's ``dest``), which say its kind where the
    dataset's own name does not (``note-taking-strategies.file`` saved as ``.pptx``)."""
    names: dict[str, list[str]] = {}
    for step in task.config + task.evaluator.postconfig:
        if step.type == "download" and isinstance(step.parameters.get("files"), list):
            for f in step.parameters["files"]:
                if _has_url(f, "url") and _is_text(f.get("path")):
                    names.setdefault(str(f["url"]), []).append(str(f["path"]).rsplit("/", 1)[-1])
    for getter in task.getters():
        if getter.type == "cloud_file":
            paths, dests = getter.config.get("path"), getter.config.get("dest")
            pairs = (
                zip(paths, dests, strict=False)
                if isinstance(paths, list) and isinstance(dests, list)
                else [(paths, dests)]
            )
            for url, dest in pairs:
                if _is_text(url) and _is_text(dest):
                    names.setdefault(str(url), []).append(str(dest))
    return {url: tuple(dict.fromkeys(n)) for url, n in names.items()}


def _has_url(entry: Any, key: str) -> bool:
    return isinstance(entry, dict) and _is_text(entry.get(key))


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)
