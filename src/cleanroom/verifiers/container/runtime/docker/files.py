"""Files in a container on a Docker daemon, read through the archive API: nothing runs
in the container, links are reported and not followed, reads are capped. A stream cut
short is tried again; one that stays so is the daemon's fault (`RuntimeUnavailable`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from cleanroom.core.observed_file import FileKind, ObservedFile
from cleanroom.core.paths import under_any
from cleanroom.docker_layer import Docker
from cleanroom.verifiers.container.agent_state.links import Entry, EntryKind
from cleanroom.verifiers.container.decision.reward import REWARD_CAP_BYTES
from cleanroom.verifiers.container.runtime.docker import archive_read
from cleanroom.verifiers.container.runtime.docker.tar import kind_of_mode
from cleanroom.verifiers.container.runtime.records import RuntimeUnavailable, close_stream

# What the runtime mounts over the image in every container: the merged folder shows
# the image's files there, not the container's.
_RUNTIME_MOUNTS = ("/dev", "/proc", "/sys", "/etc/hosts", "/etc/resolv.conf", "/etc/hostname")
_ENTRY_KINDS = {"directory": EntryKind.FOLDER, "file": EntryKind.FILE, "other": EntryKind.OTHER}
_READ_ATTEMPTS = 3
_READ_TIMEOUT_S = 10.0
_NOT_A_FOLDER = "not a directory"  # the daemon's words when a parent is a file
# The daemon's words for a path it cannot follow to its end, and what that is.
_UNREACHABLE = {
    "too many links": "a loop of symbolic links",
    "file name too long": "a path too long to follow",
}

# The naive reader (only ``shared``'s control for a trojaned reader): one file read as
# uid 0 the way a program in the container would see it (following links), without
# blocking on a FIFO and without reading past the cap. Exit 3: missing;
# 4: not a regular file (its type on stderr); otherwise stderr holds the size.
_READ_SCRIPT = r"""
p="$1"; cap="$2"
if [ ! -e "$p" ]; then exit 3; fi
if [ ! -f "$p" ]; then stat -L -c '%F' -- "$p" >&2; exit 4; fi
stat -L -c '%s' -- "$p" >&2
exec head -c "$cap" -- "$p"
"""


class DockerFiles:
    """Files in the containers of one Docker connection."""

    def __init__(self, docker: Docker) -> None:
        self.docker = docker

    def read(self, container: str, path: str, cap: int = REWARD_CAP_BYTES) -> ObservedFile:
        """Observe a file in a container through the Docker archive API: nothing runs in
        the container, links are reported and not followed, a FIFO, socket, device or
        folder is reported from its stat alone, and at most ``cap + 1`` bytes are read.

        A stream cut short or unreadable (the daemon's output lost on its way, or the
        file changing under the reader) is tried again; if it stays so the daemon's word
        cannot be trusted and `RuntimeUnavailable` says so.
        """
        failed = ""
        for _ in range(_READ_ATTEMPTS):
            try:
                chunks, stat = self.docker.get_archive(container, path)
            except RuntimeUnavailable as exc:
                answered = exc.status is not None
                # A path under a file (ENOTDIR) names nothing, as for a program that looks.
                if exc.status == 404 or (answered and _NOT_A_FOLDER in str(exc)):
                    return ObservedFile.missing(path)
                # Links that lead back to themselves or further than a path can go are
                # what the agent left, not a fault of the daemon's.
                for words, note in _UNREACHABLE.items():
                    if answered and words in str(exc):
                        return ObservedFile(path, FileKind.OTHER, note=note)
                raise
            try:
                return archive_read.observe(path, stat, chunks, cap)
            except archive_read.ArchiveReadError as exc:
                failed = str(exc)
            finally:
                close_stream(chunks)
        raise RuntimeUnavailable(f"reading {path}: {failed} in {_READ_ATTEMPTS} attempts")

    def read_with_programs(
        self, container: str, path: str, cap: int = REWARD_CAP_BYTES
    ) -> ObservedFile:
        """Observe a file the naive way, by running ``sh``, ``stat`` and ``head`` in the
        container as uid 0 (following links as a program would). Only the ``shared``
        baseline reads so: a program the agent replaced answers for the file.

        A read that returns fewer bytes than the file's size is tried again; if it stays
        short `RuntimeUnavailable` says so.
        """
        short = ""
        for _ in range(_READ_ATTEMPTS):
            observed, short = self._read_once(container, path, cap)
            if not short:
                return observed
        raise RuntimeUnavailable(f"reading {path}: {short} in {_READ_ATTEMPTS} attempts")

    def _read_once(self, container: str, path: str, cap: int) -> tuple[ObservedFile, str]:
        result = self.docker.exec(
            container,
            ["sh", "-c", _READ_SCRIPT, "read", path, str(cap + 1)],
            user="0",
            workdir="/",
            timeout=_READ_TIMEOUT_S,
            cap=cap + 4096,
        )
        if result.timed_out:
            note = f"reading it took over {_READ_TIMEOUT_S} s"
            return ObservedFile(path, FileKind.OTHER, note=note), ""
        if result.exit_code == 3:
            return ObservedFile.missing(path), ""
        if result.exit_code == 4:
            note = result.stderr.decode(errors="replace").strip()
            return ObservedFile(path, FileKind.OTHER, note=note), ""
        if result.exit_code != 0:
            raise RuntimeUnavailable(
                f"reading {path} exited {result.exit_code}: {result.output[-500:]!r}"
            )
        size = _int_or_none(result.stderr.decode(errors="replace").strip())
        data = result.stdout
        if size is None:
            return ObservedFile(path, FileKind.REGULAR, data), "no size came back"
        if len(data) < min(size, cap + 1):
            return ObservedFile(path, FileKind.REGULAR, data), (
                f"{len(data)} bytes came back of {size}"
            )
        if len(data) > cap or size > cap:
            return ObservedFile(path, FileKind.OVERSIZE, data[:cap], max(size, len(data))), ""
        return ObservedFile(path, FileKind.REGULAR, data, size), ""

    def entries(self, container: str, paths: Sequence[str]) -> dict[str, Entry]:
        """From the host's view of the container's root filesystem (its merged overlay
        folder), one ``lstat`` per path; the daemon's stat answers for paths under the
        container's own mounts (``/dev``, the files Docker binds into ``/etc``, the
        task's binds), which that view does not show, and for every path when the
        graph driver shows no merged folder."""
        info = self.docker.inspect_container(container)
        merged = str(((info.get("GraphDriver") or {}).get("Data") or {}).get("MergedDir") or "")
        mounts = [
            *_RUNTIME_MOUNTS,
            *(str(m.get("Destination", "")) for m in info.get("Mounts") or []),
        ]
        viewable = bool(merged) and os.path.isdir(merged)
        found: dict[str, Entry] = {}
        for path in paths:
            if viewable and not under_any(path, mounts):
                entry = _host_entry(merged, path)
            else:
                entry = self._daemon_entry(container, path)
            if entry.kind is not EntryKind.MISSING:
                found[path] = entry
        return found

    def _daemon_entry(self, container: str, path: str) -> Entry:
        """What ``path`` is, from the daemon's stat of it: a link's target comes back
        evaluated in the container's root. A stat the daemon answers with an error (a
        name it cannot carry or look up) names nothing, as for a program that looks."""
        try:
            stat = self.docker.stat_path(container, path)
        except RuntimeUnavailable as exc:
            if exc.status is None:
                raise
            return Entry(EntryKind.MISSING)
        if stat is None:
            return Entry(EntryKind.MISSING)
        kind = kind_of_mode(int(stat.get("mode", 0)))
        if kind == "symlink":
            return Entry(EntryKind.LINK, str(stat.get("linkTarget") or ""))
        return Entry(_ENTRY_KINDS[kind])


def _host_entry(merged: str, path: str) -> Entry:
    """What ``path`` is under ``merged``. Every folder on the way is one the resolver
    found a folder (never a link), so nothing is followed; the last name is not."""
    full = os.fsencode(merged) + os.fsencode(path)
    try:
        st = os.lstat(full)
    except (OSError, ValueError):  # missing, or a name the kernel refuses: nothing
        return Entry(EntryKind.MISSING)
    if stat.S_ISLNK(st.st_mode):
        try:
            return Entry(EntryKind.LINK, os.fsdecode(os.readlink(full)))
        except OSError:
            return Entry(EntryKind.MISSING)
    if stat.S_ISDIR(st.st_mode):
        return Entry(EntryKind.FOLDER)
    return Entry(EntryKind.FILE if stat.S_ISREG(st.st_mode) else EntryKind.OTHER)


def _int_or_none(text: str) -> int | None:
    try:
        return int(text.splitlines()[-1]) if text else None
    except ValueError:
        return None
