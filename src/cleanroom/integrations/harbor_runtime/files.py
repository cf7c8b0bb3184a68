"""Files of a Harbor environment brought to the host, where cleanroom reads them.

Nothing but Harbor's own calls reach an environment: a listing of what is there (GNU
find's ``-printf``, each field ended by a NUL byte) and an archive of its small regular
files are written to files in the environment by its ``exec`` and downloaded. Both
downloads are watched and given up past their caps. On the host the listing is made
real in a fresh folder without following anything: folders, links with their targets
(never resolved), FIFOs and sockets as such, each small regular file with its content,
a regular file past the cap as a sparse file of its size; devices are left out. Every
time is put on the host's clock, never later than it was (`environments.Clock`). The
host's readers (``host_files.read_capped``, the reward parser, the witness) then see
what a bind mount would have shown them.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import stat
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cleanroom.core.observed_file import ObservedFile
from cleanroom.host_files import read_capped
from cleanroom.integrations.harbor_runtime.bridge import Bridge
from cleanroom.integrations.harbor_runtime.environments import Clock, Environments, Held
from cleanroom.verifiers.container.agent_state.links import Entry, EntryKind
from cleanroom.verifiers.container.runtime import RuntimeUnavailable

# Records of a brought-back listing: kind, mode, size, mtime, link target, name.
_FIELDS = 6
_FORMAT_IN_FOLDER = r"%y\0%m\0%s\0%T@\0%l\0%P\0"
_FORMAT_ONE = r"%y\0%m\0%s\0%T@\0%l\0%f\0"
# At most this many entries of one folder are brought back.
MAX_ENTRIES = 10_000
LISTING_CAP = 16 << 20
ARCHIVE_CAP = 256 << 20
EXEC_LIMIT_S = 120

# $1 the path, $2 the listing's file, $3 the archive's file, $4 the cap per file, $5
# "folder" (its entries) or "one" (the path itself).
_BRING = r"""
src=$1; list=$2; arch=$3; cap=$4
if [ "$5" = folder ]; then
  [ -d "$src" ] || { : > "$list"; : > "$arch"; exit 0; }
  find "$src" -mindepth 1 -printf "$6" 2>/dev/null | head -c $((16 << 20)) > "$list"
  names=$arch.names
  find "$src" -mindepth 1 -type f -size -$((cap + 1))c -printf '%P\0' > "$names" 2>/dev/null
  tar -C "$src" --null --no-recursion -T "$names" -cf "$arch" 2>/dev/null
  rm -f "$names"
else
  if [ ! -e "$src" ] && [ ! -L "$src" ]; then : > "$list"; : > "$arch"; exit 0; fi
  find "$src" -maxdepth 0 -printf "$6" > "$list" 2>/dev/null
  dir=$(dirname -- "$src"); base=$(basename -- "$src")
  if [ -f "$src" ] && [ ! -L "$src" ] && [ "$(find "$src" -maxdepth 0 -size -$((cap + 1))c)" ]; then
    tar -C "$dir" -cf "$arch" -- "$base" 2>/dev/null
  else
    tar -cf "$arch" --files-from /dev/null
  fi
fi
exit 0
"""


@dataclass(frozen=True)
class Record:
    """One path as a brought-back listing gives it."""

    kind: str
    mode: int
    size: int
    mtime_ns: int
    target: str
    name: str


def parse_records(data: bytes) -> list[Record]:
    """The records of a listing ``_BRING`` wrote (a cut last record is left out)."""
    fields = data.split(b"\0")
    whole = (len(fields) - 1) // _FIELDS
    records: list[Record] = []
    for start in range(0, whole * _FIELDS, _FIELDS):
        kind, mode, size, mtime, target, name = fields[start : start + _FIELDS]
        try:
            seconds, _, fraction = mtime.decode("ascii").partition(".")
            nanos = int(seconds) * 1_000_000_000 + int((fraction + "000000000")[:9])
            records.append(
                Record(
                    kind.decode("ascii"),
                    int(mode, 8),
                    int(size),
                    nanos,
                    target.decode("utf-8", "surrogateescape"),
                    name.decode("utf-8", "surrogateescape"),
                )
            )
        except (UnicodeDecodeError, ValueError):
            continue  # a record no find writes: whatever wrote it is left out
        if len(records) >= MAX_ENTRIES:
            break
    return records


class Transfer:
    """Downloads and in-environment commands of one runtime's environments."""

    def __init__(self, bridge: Bridge, environments: Environments) -> None:
        self.bridge = bridge
        self.environments = environments

    def sh(
        self, held: Held, script: str, *args: str, user: str = "root", limit_s: int = EXEC_LIMIT_S
    ) -> tuple[int, str]:
        """Run ``script`` with ``args`` in ``held`` as ``user``: its exit code and output.
        `RuntimeUnavailable` when Harbor gets no answer (a command that outlasts its
        limit gives exit code None's stand-in, -1)."""
        command = shlex.join(["sh", "-c", script, "cleanroom", *args])
        try:
            done = self.bridge.call(
                held.env.exec(command, user=user, timeout_sec=limit_s, cwd="/"),
                f"running a command in {held.id}",
                limit_s + 60,
            )
        except RuntimeUnavailable as exc:
            if "timed out" in str(exc):
                return -1, ""
            raise
        return done.return_code, (done.stdout or "") + (done.stderr or "")

    def download(self, held: Held, source: str, target: Path, cap: int) -> bool:
        """Download ``source`` to ``target``; False (``target`` removed) past ``cap``."""
        return self.bridge.watched(
            held.env.download_file(source, target),
            f"downloading {source} from {held.id}",
            lambda: _size(target) > cap,
            on_stop=lambda: target.unlink(missing_ok=True),
        )

    def upload(self, held: Held, source: Path, target: str) -> None:
        self.bridge.call(held.env.upload_file(source, target), f"uploading to {held.id}")

    def upload_dir(self, held: Held, source: Path, target: str) -> None:
        self.bridge.call(held.env.upload_dir(source, target), f"uploading to {held.id}")

    def bring_back(self, held: Held, source: str, host_dir: Path, cap: int, *, folder: bool) -> None:
        """Make ``source`` (a folder's entries, or one path) real in ``host_dir``."""
        token = secrets.token_hex(6)
        listing, archive = f"/.cleanroom-list-{token}", f"/.cleanroom-files-{token}.tar"
        fmt = _FORMAT_IN_FOLDER if folder else _FORMAT_ONE
        mode = "folder" if folder else "one"
        try:
            code, output = self.sh(held, _BRING, source, listing, archive, str(cap), mode, fmt)
            if code != 0:
                raise RuntimeUnavailable(f"listing {source} in {held.id}: {output[-300:]!r}")
            with tempfile.TemporaryDirectory(prefix="cleanroom-bring-") as spool:
                local_list, local_archive = Path(spool) / "list", Path(spool) / "files.tar"
                if not self.download(held, listing, local_list, LISTING_CAP):
                    raise RuntimeUnavailable(f"the listing of {source} is over its cap")
                records = parse_records(local_list.read_bytes())
                have_archive = self.download(held, archive, local_archive, ARCHIVE_CAP)
                materialize(
                    host_dir, records, local_archive if have_archive else None, cap, held.clock
                )
        finally:
            self.sh(held, 'rm -f -- "$@"', listing, archive)

    def read(self, held: Held, path: str, cap: int) -> ObservedFile:
        """Observe ``path`` in ``held`` as `host_files.read_capped` observes a host file."""
        name = os.path.basename(path.rstrip("/")) or "root"
        with tempfile.TemporaryDirectory(prefix="cleanroom-read-") as spool:
            self.bring_back(held, path, Path(spool), cap, folder=False)
            records = os.listdir(spool)
            if not records:
                return ObservedFile.missing(path)
            return read_capped(Path(spool), records[0] if name not in records else name, path, cap)

    def entry(self, held: Held, path: str) -> Entry:
        """What ``path`` is in ``held``, from find's word on it."""
        code, output = self.sh(
            held, 'find "$1" -maxdepth 0 -printf "%y\\0%l\\0" 2>/dev/null; true', path
        )
        kind, _, rest = output.partition("\0")
        if code != 0 or not kind:
            return Entry(EntryKind.MISSING)
        if kind == "l":
            return Entry(EntryKind.LINK, rest.partition("\0")[0])
        return Entry(EntryKind.FOLDER if kind == "d" else EntryKind.OTHER)


def _size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def materialize(
    host_dir: Path, records: list[Record], archive: Path | None, cap: int, clock: Clock | None
) -> None:
    """Make ``records`` real under ``host_dir`` (emptied first), with the content of the
    small regular files from ``archive``; nothing is followed, nothing escapes."""
    for child in host_dir.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    root = os.open(host_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        placed: list[tuple[str, Record]] = []
        for record in sorted(records, key=lambda r: r.name):
            parts = record.name.split("/")
            if any(p in ("", ".", "..") for p in parts):
                continue
            if _place(root, parts, record, cap):
                placed.append((record.name, record))
        if archive is not None:
            _fill(root, archive, {name for name, r in placed if r.kind == "f"}, cap)
        for name, record in sorted(placed, key=lambda p: p[0], reverse=True):
            when = 0 if clock is None else max(0, clock.earliest_host_ns(record.mtime_ns))
            _at(root, name.split("/"), lambda fd, leaf, t=when: os.utime(
                leaf, ns=(t, t), dir_fd=fd, follow_symlinks=False
            ))
    finally:
        os.close(root)


def _parent_fd(root: int, parts: list[str]) -> int | None:
    fd = os.dup(root)
    for part in parts[:-1]:
        try:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = nxt
    return fd


def _at(root: int, parts: list[str], act: object) -> None:
    fd = _parent_fd(root, parts)
    if fd is None:
        return
    try:
        act(fd, parts[-1])  # type: ignore[operator]
    except OSError:
        pass
    finally:
        os.close(fd)


def _place(root: int, parts: list[str], record: Record, cap: int) -> bool:
    fd = _parent_fd(root, parts)
    if fd is None:
        return False
    leaf = parts[-1]
    try:
        if record.kind == "d":
            os.mkdir(leaf, 0o777, dir_fd=fd)
            os.chmod(leaf, 0o777, dir_fd=fd, follow_symlinks=False)
        elif record.kind == "l":
            os.symlink(record.target, leaf, dir_fd=fd)
        elif record.kind == "p":
            os.mkfifo(leaf, 0o600, dir_fd=fd)
        elif record.kind == "s":
            os.mknod(leaf, stat.S_IFSOCK | 0o600, dir_fd=fd)
        elif record.kind == "f":
            made = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
            try:
                if record.size > cap:  # its size alone, as a sparse file
                    os.ftruncate(made, record.size)
            finally:
                os.close(made)
        else:
            return False  # a device: never made on the host
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _fill(root: int, archive: Path, regular: set[str], cap: int) -> None:
    """Write the content of each small regular file the archive holds."""
    try:
        tar = tarfile.open(archive, "r:")  # noqa: SIM115
    except (tarfile.TarError, OSError):
        return
    with tar:
        try:
            for member in tar:
                name = member.name.removeprefix("./")
                if not member.isreg() or name not in regular or member.size > cap:
                    continue
                source = tar.extractfile(member)
                if source is None:
                    continue
                fd = _parent_fd(root, name.split("/"))
                if fd is None:
                    continue
                try:
                    out = os.open(name.split("/")[-1], os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW, dir_fd=fd)
                except OSError:
                    os.close(fd)
                    continue
                try:
                    with os.fdopen(out, "wb") as sink:
                        sink.write(source.read(cap + 1))
                finally:
                    os.close(fd)
        except (tarfile.TarError, OSError):
            return
