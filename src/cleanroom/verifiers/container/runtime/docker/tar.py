"""The tar archives and names the Docker implementation makes and reads: a host folder
packed root-owned, an archive's top member renamed, the archive API's file modes, the
hash that names a task's image."""

from __future__ import annotations

import hashlib
import io
import os
import re
import tarfile
from collections.abc import Sequence
from pathlib import Path


def kind_of_mode(mode: int) -> str:
    """``directory``, ``symlink``, ``other`` or ``file``, from Go's ``os.FileMode`` bits
    as the archive endpoint reports them."""
    if mode & (1 << 31):
        return "directory"
    if mode & (1 << 27):
        return "symlink"
    if mode & ((1 << 26) | (1 << 25) | (1 << 24) | (1 << 21)):
        return "other"  # device, named pipe, socket, char device
    return "file"


def environment_hash(folder: Path) -> str:
    """A hash of every file under ``folder``: relative names, executable bits and contents."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            digest.update(f"L {rel} {os.readlink(path)}\n".encode())
        elif path.is_file():
            mode = "x" if os.access(path, os.X_OK) else "-"
            digest.update(f"F {rel} {mode} {path.stat().st_size}\n".encode())
            digest.update(path.read_bytes())
        else:
            digest.update(f"D {rel}\n".encode())
    return digest.hexdigest()[:16]


def renamed_top(archive: bytes, name: str, skip: Sequence[str] = ()) -> bytes:
    """The tar ``archive`` with its top member (and everything under it) renamed ``name``,
    leaving out the members at or under the paths in ``skip`` (``logs/verifier``)."""
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(archive)) as src,
        tarfile.open(fileobj=out, mode="w") as dst,
    ):
        for member in src:
            original = member.name.rstrip("/")
            if any(original == s or original.startswith(s + "/") for s in skip):
                continue
            _, sep, rest = member.name.partition("/")
            member.name = f"{name}{sep}{rest}"
            if member.islnk():
                _, lsep, lrest = member.linkname.partition("/")
                member.linkname = f"{name}{lsep}{lrest}"
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
    return out.getvalue()


def only_the_folder(archive: bytes) -> bool:
    """Whether the archive holds its top folder and nothing in it."""
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return len(tar.getmembers()) <= 1


def safe_name(name: str) -> str:
    """``name`` as a Docker name may spell it."""
    return re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-.") or "task"


def tar_folder(source: Path, name: str) -> bytes:
    """A host folder as a tar whose top member is ``name``, every member owned by root."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(source), arcname=name, filter=_root_owned)
    return buf.getvalue()


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info
