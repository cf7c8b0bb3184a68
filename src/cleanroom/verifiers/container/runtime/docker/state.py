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
from cleanroom.verifiers.container.agent_state.state_archive import ArtifactRules
from cleanroom.verifiers.container.decision.tamper import Change, ChangeKind, Diff
from cleanroom.verifiers.container.runtime.checked_archive import checked_copy
from cleanroom.verifiers.container.runtime.clear_state import (
    CLEAR_STATE_SCRIPT,
    absent_probed,
    clear_state_args,
)
from cleanroom.verifiers.container.runtime.docker import overlay
from cleanroom.verifiers.container.runtime.docker.files import _NOT_A_FOLDER, _UNREACHABLE
from cleanroom.verifiers.container.runtime.docker.tar import kind_of_mode
from cleanroom.verifiers.container.runtime.records import (
    RuntimeUnavailable,
    StateCopy,
    StateTooLarge,
    close_stream,
)


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
        self, container: str, path: str, cap: int, artifact: ArtifactRules | None = None
    ) -> StateCopy:
        """Through the archive API. A path reached through a loop of links is a
        `StateArchiveError` too (a transport failure is `RuntimeUnavailable`); device
        nodes and sockets are dropped and listed; a name near PATH_MAX is reported in
        ``too_long``. An ``artifact`` passes its stricter rules too."""
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
        if not paths and not probe:
            return set()
        argv = ["sh", "-c", CLEAR_STATE_SCRIPT, "clear", *clear_state_args(paths, probe)]
        cleared = self.docker.exec(container, argv, user="0", workdir="/")
        if cleared.exit_code != 0:
            raise RuntimeUnavailable(f"clearing state paths {paths}: {cleared.output[-300:]!r}")
        return absent_probed(cleared.stdout.decode("utf-8", "surrogateescape"), probe)

    def install(
        self, container: str, copies: Sequence[StateCopy], *, cleared: Sequence[str] = ()
    ) -> None:
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
