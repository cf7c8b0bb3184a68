"""The name files (``/etc/hosts``, ``/etc/resolv.conf``, ``/etc/hostname``) of the
agent's container, taken before the agent acts, bound read-only into a verifier that
joins the agent's network namespace, and compared with the agent's after it acted
(`decision.name_files`).
"""

from __future__ import annotations

import posixpath
import tempfile
from pathlib import Path

from cleanroom.verifiers.container.decision.name_files import (
    NAME_FILE_CAP,
    NAME_FILE_PATHS,
    NameFileChange,
    NameFiles,
    NameFilesUnreadable,
    changes,
)
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, VerificationRuntime


def take(rt: VerificationRuntime, container: str) -> NameFiles:
    """The container's name files as they are now: call it before anything of the
    agent's has run there. Read through the runtime's `Files` (nothing runs in the
    container); one that is no regular file is the runtime's doing."""
    observed = {path: rt.files.read(container, path, NAME_FILE_CAP) for path in NAME_FILE_PATHS}
    try:
        return NameFiles.of(observed)
    except NameFilesUnreadable as exc:
        raise RuntimeUnavailable(f"taking the agent's container's name files: {exc}") from exc


def changed(rt: VerificationRuntime, container: str, made: NameFiles) -> tuple[NameFileChange, ...]:
    """What the agent changed of ``made`` in its container (read without following
    links or running anything there)."""
    now = {path: rt.files.read(container, path, NAME_FILE_CAP) for path in NAME_FILE_PATHS}
    return changes(made, now)


def host_copies(workspace: Path, made: NameFiles) -> dict[Path, str]:
    """``made`` written to a fresh host folder of ``workspace`` (the harness's own), as
    binds: each host file by the path it takes in the verifier's container."""
    folder = Path(tempfile.mkdtemp(prefix="name-files-", dir=workspace))
    folder.chmod(0o755)
    binds: dict[Path, str] = {}
    for path, data in made.by_path().items():
        host = folder / posixpath.basename(path)
        host.write_bytes(data)
        host.chmod(0o644)
        binds[host] = path
    return binds
