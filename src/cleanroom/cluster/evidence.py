"""A node's evidence files, copied into the driver's run folder beside its records.

On the node: the files of its run folder that hold evidence (the checks' ``evidence/``,
the leaky controls' folders, the positive control's evidence, the node's log), each
read without following a link and without waiting on anything but a regular file, and
sent when new or changed since the last copy, at most `BATCH_BYTES` at a time. At the
driver: each file under ``nodes/<node>/`` of the run folder, at the same relative path;
a path that would climb out of that folder is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from cleanroom.host_files import NotARegularFile, read_beneath
from cleanroom.store.folders import private_folder

# What a node's run folder holds that is evidence, relative to it.
EVIDENCE_FOLDERS = ("evidence", "controls")
EVIDENCE_FILES = ("control-evidence.json", "controls.json", "node.log")
# Never copied: the databases (their records travel by pulls) and what every run has.
SKIPPED_SUFFIXES = (".sqlite", ".sqlite-wal", ".sqlite-shm", ".lock")
FILE_CAP = 16 << 20
BATCH_BYTES = 64 << 20
NODES_FOLDER = "nodes"


@dataclass
class EvidenceBatch:
    """Files of a node's run folder: relative path and bytes; ``more`` when some were
    left for the next batch."""

    files: list[tuple[str, bytes]] = field(default_factory=list)
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)
    more: bool = False
    skipped: list[str] = field(default_factory=list)  # not regular, or over the cap


def evidence_since(run_dir: Path, seen: dict[str, tuple[int, int]]) -> EvidenceBatch:
    """The evidence files of ``run_dir`` new or changed since ``seen`` (size and mtime
    by relative path); ``batch.seen`` is what the next call should be given."""
    batch = EvidenceBatch(seen=dict(seen))
    budget = BATCH_BYTES
    for rel in _candidates(run_dir):
        try:
            st = os.stat(run_dir / rel, follow_symlinks=False)
        except OSError:
            continue
        stamp = (st.st_size, st.st_mtime_ns)
        if seen.get(rel) == stamp:
            continue
        if st.st_size > budget and batch.files:
            batch.more = True
            continue
        try:
            data = read_beneath(run_dir, run_dir / rel, cap=FILE_CAP)
        except (NotARegularFile, OSError, ValueError):
            batch.skipped.append(rel)
            batch.seen[rel] = stamp
            continue
        batch.files.append((rel, data))
        batch.seen[rel] = stamp
        budget -= len(data)
    return batch


def _candidates(run_dir: Path) -> list[str]:
    found = [name for name in EVIDENCE_FILES if (run_dir / name).is_file()]
    for top in EVIDENCE_FOLDERS:
        for folder, dirs, files in os.walk(run_dir / top, followlinks=False):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(SKIPPED_SUFFIXES):
                    continue
                found.append(str(Path(folder, name).relative_to(run_dir)))
    return found


def keep_evidence(run_dir: Path, node: str, batch: EvidenceBatch) -> int:
    """Write ``batch`` under ``run_dir/nodes/<node>/``; return how many files."""
    root = private_folder(run_dir / NODES_FOLDER / node_folder_name(node))
    kept = 0
    for rel, data in batch.files:
        parts = PurePosixPath(rel).parts
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
            continue
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        partial.write_bytes(data)
        partial.replace(target)
        kept += 1
    return kept


def node_folder_name(node: str) -> str:
    """A node's name as one folder name."""
    return node.replace("/", "-")
