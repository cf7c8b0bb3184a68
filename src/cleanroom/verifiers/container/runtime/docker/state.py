"""The agent's changes and state on a Docker daemon: the container's diff (read from its
writable layer, or the API), each state path taken out through the archive API as a
checked archive, and installed in the verifier's container over what the image had."""

from __future__ import annotations

import posixpath
import tempfile
from collections.abc import Sequence
from typing import IO

from cleanroom.docker_layer import Docker
from cleanroom.verifiers.container.agent_state import state_archive
from cleanroom.verifiers.container.decision.tamper import Change, ChangeKind, Diff
from cleanroom.verifiers.container.runtime.checked_archive import checked_copy
from cleanroom.verifiers.container.runtime.docker import overlay
from cleanroom.verifiers.container.runtime.docker.files import _NOT_A_FOLDER, _UNREACHABLE
from cleanroom.verifiers.container.runtime.docker.tar import kind_of_mode
from cleanroom.verifiers.container.runtime.records import (
    RuntimeUnavailable,
    StateCopy,
    StateTooLarge,
    close_stream,
)

# Removes each state path, then makes each parent folder, then names (NUL-ended) each
# probed path that is absent and has its parent folder, so needs no clearing:
# ``clear PATH... -- PARENT... --probe PROBED...``.
CLEAR_STATE_SCRIPT = r"""
part=0
for p in "$@"; do
  case "$p" in --) part=1; continue;; --probe) part=2; continue;; esac
  case $part in
    0) rm -rf -- "$p";;
    1) mkdir -p -- "$p";;
    2) d=${p%/*}
       if [ ! -e "$p" ] && [ ! -L "$p" ] && [ -d "${d:-/}" ]; then printf '%s\0' "$p"; fi;;
  esac
done
"""


class DockerStateTransfer:
    """What the agent changed and left, in the containers of one Docker connection."""

    def __init__(self, docker: Docker) -> None:
        self.docker = docker

    def changes(self, container: str) -> Diff:
        """The container's filesystem diff and how it was read (``overlay`` or ``api``).

        The diff is evidence, never a gate: when neither the writable layer nor the API
        can list it (the daemon's own walk fails on trees deeper than PATH_MAX), the
        result is empty, with ``source`` ``unreadable`` and the reason.
        """
        graph = self.docker.inspect_container(container).get("GraphDriver") or {}
        try:
            return overlay.changes_from_graph_driver(graph)
        except overlay.OverlayUnreadable as exc:
            unreadable = str(exc)
        try:
            raw = self.docker.diff(container)
        except RuntimeUnavailable as exc:
            return Diff([], "unreadable", f"{unreadable}; {exc}"[:500])
        return Diff([Change(d["Path"], ChangeKind.from_docker(d["Kind"])) for d in raw], "api")

    # State carried from the agent's container to the verifier's -----------------------

    def export(
        self,
        container: str,
        path: str,
        cap: int,
        artifact: state_archive.ArtifactRules | None = None,
    ) -> StateCopy:
        """Take ``path`` from a (paused) container as a checked tar archive.

        Raises `StateTooLarge` past ``cap`` bytes, and `StateArchiveError` when what
        arrived cannot be read as an archive or the path is reached through a loop of
        links (a transport failure is `RuntimeUnavailable` instead); device nodes and
        sockets are dropped and listed; a name near PATH_MAX is reported in ``too_long``.
        An ``artifact`` passes its stricter rules too.
        """
        try:
            chunks, info = self.docker.get_archive(container, path)
        except RuntimeUnavailable as exc:
            answered = exc.status is not None
            if exc.status == 404 or (answered and _NOT_A_FOLDER in str(exc)):
                return StateCopy(path, "missing")
            # A path through a loop of links, or deeper than a path can go, is what the
            # agent left there, not a fault of the daemon's.
            for words, note in _UNREACHABLE.items():
                if answered and words in str(exc):
                    unreachable = f"{path} is reached through {note}"
                    raise state_archive.StateArchiveError(unreachable) from exc
            raise
        kind = kind_of_mode(int(info.get("mode", 0)))
        spooled: IO[bytes] = tempfile.TemporaryFile(prefix="cleanroom-state-")  # noqa: SIM115
        try:
            size = state_archive.copy_capped(chunks, spooled, cap)
        except BaseException:
            spooled.close()
            raise
        finally:
            # An archive left half read holds the daemon's side of the stream, and with
            # it the container: its removal would wait for as long as anything (a stored
            # exception's frames) kept the stream alive.
            close_stream(chunks)
        if size is None:
            spooled.close()
            raise StateTooLarge(path, cap)
        if self.docker.podman:
            spooled = _rooted(spooled, posixpath.basename(path.rstrip("/")) or "/")
        return checked_copy(path, kind, spooled, artifact)

    def clear(self, container: str, paths: Sequence[str], probe: Sequence[str] = ()) -> set[str]:
        """Remove what the pristine image holds at each of ``paths`` in the verifier's
        container, and make their parent folders, ready for `install`; return the
        ``probe`` paths that are absent there and have their parent folder (installing
        at them needs no clearing)."""
        if not paths and not probe:
            return set()
        parents = sorted({posixpath.dirname(p) or "/" for p in paths})
        argv = ["sh", "-c", CLEAR_STATE_SCRIPT, "clear", *paths, "--", *parents]
        cleared = self.docker.exec(container, [*argv, "--probe", *probe], user="0", workdir="/")
        if cleared.exit_code != 0:
            raise RuntimeUnavailable(f"clearing state paths {paths}: {cleared.output[-300:]!r}")
        named = cleared.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]
        return {p for p in named if p in probe}

    def install(
        self, container: str, copies: Sequence[StateCopy], *, cleared: Sequence[str] = ()
    ) -> None:
        """Replace each state path in the verifier's container by the agent's version.

        What the pristine image holds at a state path is removed first (`clear`;
        ``cleared`` names paths already cleared, or found to need no clearing), so the
        verifier sees the agent's state exactly (a file the agent deleted stays deleted).
        """
        self.clear(container, [c.path for c in copies if c.path not in cleared])
        for copy in copies:
            if copy.archive is None:
                continue
            parent = posixpath.dirname(copy.path) or "/"
            copy.archive.seek(0)
            self.docker.put_archive(container, parent, copy.archive)


def _rooted(spooled: IO[bytes], top: str) -> IO[bytes]:
    """``spooled`` with its members named as Docker names them (`state_archive.rooted`)."""
    out: IO[bytes] = tempfile.TemporaryFile(prefix="cleanroom-state-")  # noqa: SIM115
    try:
        state_archive.rooted(state_archive.rewind(spooled), out, top)
    except state_archive.ArchiveNotRooted as exc:
        out.close()
        raise RuntimeUnavailable(str(exc)) from exc
    except BaseException:
        out.close()
        raise
    finally:
        spooled.close()
    return out
