"""Harbor's artifacts: what the agent leaves the verifier, and its record on the host.

Harbor collects ``/logs/artifacts`` and every path the task's ``artifacts`` names from the
agent's container once the agent phase ends, before the verifier runs, into the trial's
``artifacts/`` folder: each entry at its source path with the leading ``/`` stripped, or
at its ``destination``, with a ``manifest.json`` saying what each entry gave (``ok``,
``empty``, ``failed``, or ``skipped`` when an earlier entry already claimed that place).
A verifier in another container than the agent's gets each entry back at its source path.

This module plans that collection (which entries, where on the host), writes what was
taken to the host, and describes it for the outcome. Taking the archives out of the
container is `DockerRuntime.export_state` with `ArtifactRules`: the rules that keep an
artifact from being a route to the verifier (links out of it, FIFOs, devices, set-id
bits, the size cap) are applied there, once, for the verifier and the host alike.
"""

from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from cleanroom.core.paths import under
from cleanroom.verifiers.container.agent_state.links import Entry
from cleanroom.verifiers.container.agent_state.state_archive import (
    ArtifactRules,
    StateArchiveError,
    rewind,
)
from cleanroom.verifiers.container.task import MANIFEST_NAME, ArtifactEntry


@dataclass
class Collected:
    """One artifact entry after collection.

    ``status`` is Harbor's: ``ok``, ``empty`` (a folder with nothing in it), ``failed``
    (missing, or refused: ``note`` says why), ``skipped`` (its host place overlaps an
    earlier entry's). ``archive`` holds what was taken, checked, for the verifier.
    """

    entry: ArtifactEntry
    status: str = "skipped"
    kind: str = "missing"
    archive: IO[bytes] | None = None
    dropped: list[str] = field(default_factory=list)
    note: str = ""
    # The archive's members (`StateCopy.tree`), for resolving its links in the verifier.
    tree: dict[str, Entry] = field(default_factory=dict)

    @property
    def carried(self) -> bool:
        """Whether the verifier gets this entry at its source path."""
        return self.archive is not None and self.status in ("ok", "empty")

    def close(self) -> None:
        if self.archive is not None:
            self.archive.close()

    def describe(self) -> dict[str, Any]:
        """The entry as the outcome's details list it (Harbor's manifest fields, and
        what was left out of it)."""
        out: dict[str, Any] = {
            "source": self.entry.source,
            "destination": f"artifacts/{self.entry.host_path}",
            "type": "directory" if self.kind == "directory" else "file",
            "status": self.status,
        }
        if self.entry.exclude:
            out["exclude"] = list(self.entry.exclude)
        if self.dropped:
            out["dropped"] = self.dropped
        if self.note:
            out["note"] = self.note
        return out


def plan(entries: Sequence[ArtifactEntry]) -> list[Collected]:
    """Every entry, in order, those whose host place overlaps an earlier one's skipped
    (Harbor keeps the first claim and never overwrites it)."""
    planned: list[Collected] = []
    claimed: list[str] = []
    for entry in entries:
        place = "/" + entry.host_path
        overlaps = any(under(place, c) or under(c, place) for c in claimed)
        planned.append(Collected(entry, status="skipped" if overlaps else "pending"))
        if not overlaps:
            claimed.append(place)
    return planned


def rules(entry: ArtifactEntry) -> ArtifactRules:
    """The archive rules one entry is taken with."""
    return ArtifactRules(exclude=tuple(entry.exclude))


def status_of(kind: str, archive: IO[bytes] | None) -> str:
    """Harbor's status for what was taken: ``failed`` when nothing was there, ``empty``
    for a folder that holds nothing (after what was left out), else ``ok``."""
    if kind == "missing" or archive is None:
        return "failed"
    if kind != "directory":
        return "ok" if _members(archive) else "failed"
    return "ok" if _members(archive) > 1 else "empty"


def write_to_host(folder: Path, collected: Sequence[Collected]) -> None:
    """Unpack each collected entry into ``folder`` at its host place, and write Harbor's
    ``manifest.json`` there. Each archive was checked when taken; the unpacking still
    uses the tar module's ``data`` filter, member by member, so nothing lands outside
    ``folder`` whatever an archive holds."""
    folder.mkdir(parents=True, exist_ok=True)
    for item in collected:
        if item.archive is None or item.status not in ("ok", "empty"):
            continue
        target = folder / item.entry.host_path
        with tempfile.TemporaryDirectory(dir=folder, prefix=".unpacking-") as staging:
            refused = _unpack(rewind(item.archive), Path(staging))
            item.dropped.extend(refused)
            unpacked = list(Path(staging).iterdir())
            if not unpacked:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            # A collection into a folder used before replaces what it holds there.
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
            shutil.move(str(unpacked[0]), target)
    manifest = [c.describe() for c in collected]
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")


def _unpack(archive: IO[bytes], into: Path) -> list[str]:
    refused: list[str] = []
    try:
        with tarfile.open(fileobj=archive, mode="r|") as tar:
            for member in tar:
                try:
                    tar.extract(member, into, filter="data")
                except (tarfile.TarError, OSError) as exc:
                    refused.append(f"{member.name}: {exc}")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise StateArchiveError(f"the artifact archive is unreadable: {exc}") from exc
    return refused


def _members(archive: IO[bytes]) -> int:
    try:
        with tarfile.open(fileobj=rewind(archive), mode="r|") as tar:
            return sum(1 for _ in tar)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise StateArchiveError(f"the artifact archive is unreadable: {exc}") from exc
    finally:
        rewind(archive)
