"""A state path's archive, however a runtime took it out, made a checked `StateCopy`."""

from __future__ import annotations

import posixpath
import tempfile
from typing import IO

from cleanroom.verifiers.container.agent_state import state_archive
from cleanroom.verifiers.container.runtime.records import StateCopy


def checked_copy(
    path: str, kind: str, spooled: IO[bytes], artifact: state_archive.ArtifactRules | None
) -> StateCopy:
    """``spooled`` (an archive of ``path`` with its members named as Docker names them,
    the path's own name first) as a `StateCopy`: scanned, devices and sockets dropped and
    listed, an ``artifact``'s stricter rules applied. `StateArchiveError` for what cannot
    be read as such an archive, or holds a member outside ``path``; the copy owns
    ``spooled`` either way."""
    copy = StateCopy(path, kind, spooled)
    try:
        top = posixpath.basename(path.rstrip("/")) or None
        found = state_archive.scan(state_archive.rewind(spooled), artifact, top)
        copy.too_long = found.too_long
        copy.tree = found.tree
        copy.dropped = found.dropped[: state_archive.SHOWN]
        if found.dropped or artifact is not None:
            filtered: IO[bytes] = tempfile.TemporaryFile(prefix="cleanroom-state-")  # noqa: SIM115
            state_archive.without_dropped(state_archive.rewind(spooled), filtered, artifact)
            spooled.close()
            copy.archive = filtered
    except state_archive.StateArchiveError:
        copy.close()
        raise
    return copy
