"""What the agent changed, and its state carried, on Harbor's environment interface.

The changes are two listings compared (`agent_state.listing`): the agent's environment's
against the first fresh environment of the same image, listed before anything was put in
it. A state path leaves the agent's environment as a tar archive written there by its
``exec`` and downloaded, watched against the cap; the archive then passes the same checks
as one from Docker's archive API (`checked_archive`). It is installed in the verifier's
environment by an upload and a ``tar`` of the pristine image's own.
"""

from __future__ import annotations

import os
import posixpath
import secrets
import shlex
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import IO

from cleanroom.verifiers.container.agent_state import state_archive
from cleanroom.verifiers.container.agent_state.listing import (
    Listing,
    ListingError,
    changes_between,
    listing_command,
    parse_listing,
)
from cleanroom.verifiers.container.agent_state.state_archive import ArtifactRules
from cleanroom.verifiers.container.decision.tamper import Diff
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, StateCopy, StateTooLarge
from cleanroom.verifiers.container.runtime.checked_archive import checked_copy
from cleanroom.verifiers.container.runtime.clear_state import (
    CLEAR_STATE_SCRIPT,
    absent_probed,
    clear_state_args,
)
from cleanroom.verifiers.container.runtime.harbor.environments import (
    START_LIMIT_S,
    Environments,
    Held,
)
from cleanroom.verifiers.container.runtime.harbor.files import AgentWithheld, Transfer

# Files every engine writes anew into each container it starts.
PER_CONTAINER = ("/etc/hostname", "/etc/hosts", "/etc/resolv.conf")
LISTING_CAP = 256 << 20

# $1 the path, $2 the archive to write: "missing" when nothing is there.
_EXPORT = r"""
p=$1; out=$2
if [ ! -e "$p" ] && [ ! -L "$p" ]; then echo missing; exit 0; fi
tar -C "$(dirname -- "$p")" --numeric-owner -cf "$out" -- "$(basename -- "$p")" 2> "$out.err"
rc=$?
tail -c 1000 "$out.err"; rm -f "$out.err"
exit $rc
"""
# $1 the work dir to make again ("" for none), $2 `CLEAR_STATE_SCRIPT`, then its
# arguments. Its exit code on a failure: `_CLEAR_FAILED`.
_CLEAR_FAILED = 97
_CLEAR = r"""
remake=$1; clear=$2; shift 2
sh -c "$clear" cleanroom "$@" || exit 97
[ -z "$remake" ] || mkdir -p -- "$remake" || exit 97
"""
# $1 the archives one after another, then for each: the folder it is unpacked in, where
# it starts in $1 and its length. On a failure: the archive's index, then tar's words.
_INSTALL = r"""
all=$1; shift; i=0; rc=0
while [ $# -ge 3 ]; do
  if ! tail -c +$(($2 + 1)) "$all" | head -c "$3" \
      | tar -C "$1" --numeric-owner -xpf - 2> "$all.err"; then
    rc=1; echo $i; tail -c 300 "$all.err"; break
  fi
  i=$((i + 1)); shift 3
done
rm -f -- "$all" "$all.err"; exit $rc
"""


def refused(message: str) -> RuntimeUnavailable:
    """A call the environment answered and refused: what the agent left may be why."""
    exc = RuntimeUnavailable(message)
    exc.status = 422
    return exc


class HarborStateTransfer:
    """`StateTransfer` on Harbor environments."""

    def __init__(self, environments: Environments, transfer: Transfer, watched: Sequence[str]):
        self.environments = environments
        self.transfer = transfer
        self.watched = tuple(watched)

    def listing_command(self) -> tuple[str, str]:
        """A file in an environment to list its filesystem into, and the command that
        does (its output is not read: run it with other commands in one call). It is at
        the top, where no state path is, so that it may be left until the next command
        there removes it (`Held.leftovers`) without being taken as state."""
        target = f"/.cleanroom-listing-{secrets.token_hex(6)}"
        command = listing_command(("/",), self.watched)
        return target, f"{{ {command}; }} > {shlex.quote(target)} 2>/dev/null"

    def listing(self, held: Held, listed_at: str | None = None) -> Listing:
        """``held``'s filesystem as `agent_state.listing` lists it (already listed into
        ``listed_at``, or listed now); `ListingError` for output that is not a listing.
        The listing's file is left for the next command there to remove."""
        target = listed_at
        try:
            if target is None:
                target, command = self.listing_command()
                self.transfer.sh(held, f"{command}; true")
            with tempfile.TemporaryDirectory(prefix="cleanroom-listing-") as spool:
                local = Path(spool) / "listing"
                try:
                    if not self.transfer.download(held, target, local, LISTING_CAP):
                        raise ListingError(f"the listing is over {LISTING_CAP >> 20} MiB")
                except AgentWithheld as exc:
                    raise ListingError(f"no listing was left: {exc}") from exc
                found = parse_listing(local.read_bytes())
        finally:
            if target is not None:
                held.leftovers.append(target)
        noise = {target, *PER_CONTAINER}
        return Listing({p: e for p, e in found.entries.items() if p not in noise}, found.cut)

    def note_pristine(self, held: Held, listed_at: str | None = None) -> None:
        """List a fresh environment as the pristine image's (already listed into
        ``listed_at``, or listed now), unless one of its image has been."""
        pristine = self.environments.pristine(held.image)
        if pristine.done():
            if listed_at is not None:
                held.leftovers.append(listed_at)
            return
        self.environments.listed(held.image, self.listing(held, listed_at))

    def changes(self, container: str) -> Diff:
        """The agent's environment's listing against the pristine one (evidence: a
        listing the agent's programs could not give comes back empty with why)."""
        held = self.environments.get(container)
        try:
            pristine = self.environments.pristine(held.image).result(START_LIMIT_S)
        except FutureTimeout:
            raise RuntimeUnavailable(f"no fresh environment of {held.image} was listed") from None
        try:
            after = self.listing(held)
        except ListingError as exc:
            return Diff([], "unreadable", f"the agent's environment gave no listing: {exc}"[:500])
        return changes_between(pristine, after, "listing")

    def export(
        self, container: str, path: str, cap: int, artifact: ArtifactRules | None = None
    ) -> StateCopy:
        """Archived by the environment's own ``tar`` and downloaded, watched against
        ``cap``."""
        held = self.environments.get(container)
        path = posixpath.normpath(path)
        inside = f"/.cleanroom-state-{secrets.token_hex(6)}.tar"
        try:
            code, output = self.transfer.sh(held, _EXPORT, path, inside)
            if code == 0 and output.strip() == "missing":
                return StateCopy(path, "missing")
            if code not in (0, 1):  # 1: a file changed as it was read
                raise state_archive.StateArchiveError(
                    f"{path} could not be archived in the agent's environment: {output[-300:]}"
                )
            spooled = self._download(held, inside, path, cap)
        finally:
            held.leftovers.append(inside)
        try:
            kind = _kind_of_top(spooled)
        except BaseException:
            spooled.close()
            raise
        return checked_copy(path, kind, spooled, artifact)

    def _download(self, held: Held, inside: str, path: str, cap: int) -> IO[bytes]:
        with tempfile.TemporaryDirectory(prefix="cleanroom-state-") as spool:
            local = Path(spool) / "state.tar"
            try:
                if not self.transfer.download(held, inside, local, cap):
                    raise StateTooLarge(path, cap)
            except AgentWithheld as exc:
                raise state_archive.StateArchiveError(
                    f"the agent's environment left no archive of {path}: {exc}"
                ) from exc
            spooled: IO[bytes] = open(local, "rb")  # noqa: SIM115
            os.unlink(local)  # the open file is all that is left of it
        return spooled

    def clear(self, container: str, paths: Sequence[str], probe: Sequence[str] = ()) -> set[str]:
        """`CLEAR_STATE_SCRIPT` in one command, with the work dir made again if it was
        cleared: an engine starts every command in the image's working folder, and one
        that is gone fails them all (an upload included) until the agent's is installed.
        It comes back empty; the agent's folder is extracted into it."""
        if not paths and not probe:
            return set()
        held = self.environments.get(container)
        script, args = self._clearing(held, paths, probe)
        code, output = self.transfer.sh(held, script, *args)
        if code != 0:
            raise RuntimeUnavailable(f"clearing state paths {list(paths)}: {output[-300:]!r}")
        return absent_probed(output, probe)

    def _clearing(
        self, held: Held, paths: Sequence[str], probe: Sequence[str] = ()
    ) -> tuple[str, list[str]]:
        """The script that clears ``paths`` in ``held`` (and makes its work dir again),
        and its arguments: exit code `_CLEAR_FAILED` when it fails."""
        workdir = self.environments.workdirs.get(held.image)
        remake = workdir if workdir and workdir in paths else ""
        return _CLEAR, [remake, CLEAR_STATE_SCRIPT, *clear_state_args(paths, probe)]

    def install(
        self, container: str, copies: Sequence[StateCopy], *, cleared: Sequence[str] = ()
    ) -> None:
        """Every copy's archive in one upload (their bytes one after another) and
        unpacked by one command: the pristine image's ``tar``, each archive at its
        path's parent."""
        held = self.environments.get(container)
        to_clear = [c.path for c in copies if c.path not in cleared]
        carried = [c for c in copies if c.archive is not None]
        if not carried:
            self.clear(container, to_clear)
            return
        inside = f"/.cleanroom-install-{secrets.token_hex(6)}"
        places: list[str] = []
        with tempfile.NamedTemporaryFile(prefix="cleanroom-install-") as local:
            for copy in carried:
                assert copy.archive is not None
                start = local.tell()
                shutil.copyfileobj(state_archive.rewind(copy.archive), local)
                size = local.tell() - start
                places += [posixpath.dirname(copy.path) or "/", str(start), str(size)]
            local.flush()
            self.transfer.upload(held, Path(local.name), inside)
        # What is left to clear goes in the same command, first.
        scripts = [self._clearing(held, to_clear)] if to_clear else []
        code, output = self.transfer.sh_all(
            held, [*scripts, (_INSTALL, [inside, *places])], chained=True
        )
        if code == _CLEAR_FAILED:
            raise RuntimeUnavailable(f"clearing state paths {to_clear}: {output[-300:]!r}")
        if code != 0:
            first, _, said = output.partition("\n")
            index = int(first) if first.isdigit() and int(first) < len(carried) else 0
            raise refused(f"installing {carried[index].path}: {said[-300:]}")


def _kind_of_top(spooled: IO[bytes]) -> str:
    """What the archive's first member (the path itself) is, as Docker's archive API
    names it."""
    try:
        with tarfile.open(fileobj=state_archive.rewind(spooled), mode="r:") as tar:
            top = tar.next()
    except tarfile.TarError as exc:
        raise state_archive.StateArchiveError(f"the agent's state archive: {exc}") from exc
    finally:
        spooled.seek(0)
    if top is None:
        raise state_archive.StateArchiveError("the agent's state archive is empty")
    if top.isdir():
        return "directory"
    if top.issym():
        return "symlink"
    return "file" if top.isreg() else "other"
