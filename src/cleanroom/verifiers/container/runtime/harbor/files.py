"""Files of a Harbor environment brought to the host, where cleanroom reads them.

Nothing but Harbor's own calls reach an environment: a listing of what is there (GNU
find's ``-printf``, each field ended by a NUL byte) and an archive of its small regular
files are written to files in the environment by its ``exec`` and downloaded. Both
downloads are watched and given up past their caps. On the host the listing is made
real in a fresh folder without following anything: folders, links with their targets
(never resolved), FIFOs and sockets as such, devices as the null device, each small
regular file with its content, a regular file past the cap as a sparse file of its size. Every
time is put on the host's clock, never later than it was (`environments.Clock`). The
host's readers (``host_files.read_capped``, the reward parser, the witness) then see
what a bind mount would have shown them.
"""

from __future__ import annotations

import os
import secrets
import shlex
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from cleanroom.core.observed_file import ObservedFile
from cleanroom.host_files import read_capped
from cleanroom.verifiers.container.agent_state.links import Entry, EntryKind
from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.runtime.harbor.bridge import Bridge, outlasted_its_limit
from cleanroom.verifiers.container.runtime.harbor.environments import Environments, Held
from cleanroom.verifiers.container.runtime.remote_files import (
    BundleError,
    materialize,
    parse_records,
    unbundle,
)

_FIND_KINDS = {"d": EntryKind.FOLDER, "f": EntryKind.FILE}
_ENTRIES_BATCH_BYTES = 64 * 1024
_FORMAT_IN_FOLDER = r"%y\0%m\0%s\0%T@\0%l\0%P\0"
_FORMAT_ONE = r"%y\0%m\0%s\0%T@\0%l\0%f\0"
LISTING_CAP = 16 << 20
ARCHIVE_CAP = 256 << 20
EXEC_LIMIT_S = 120
# A command of the harness's in the agent's environment is run by the agent's own shell,
# which may never return: it gets this long, once.
AGENT_COMMAND_LIMIT_S = 20

# $1 the path, $2 the listing's file, $3 the archive's file, $4 the cap per file, $5
# "folder" (its entries) or "one" (the path itself).
_BRING = r"""
src=$1; list=$2; arch=$3; cap=$4
if [ "$5" = folder ] && [ -L "$src" -o ! -d "$src" ]; then
  # The folder itself was replaced (a bind mount cannot be): what replaced it is brought
  # back inside it, under its own name.
  set -- "$src" "$list" "$arch" "$cap" one "$7"
fi
if [ "$5" = folder ]; then
  find "$src" -mindepth 1 -printf "$6" 2>/dev/null | head -c $((16 << 20)) > "$list"
  names=$arch.names
  # Smallest first: an archive cut at its cap still holds the reward files.
  if command -v sort >/dev/null && command -v sed >/dev/null; then
    find "$src" -mindepth 1 -type f -size -$((cap + 1))c -printf '%s/%P\0' 2>/dev/null \
      | sort -zn | sed -z 's|^[0-9]*/||' > "$names"
  else
    find "$src" -mindepth 1 -type f -size -$((cap + 1))c -printf '%P\0' > "$names" 2>/dev/null
  fi
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


# $1 the bundle's file, $2 the cap per file, $3 and $4 the listing's formats (in a
# folder, of one path), $5 `_BRING`, then pairs of a source and "folder" or "one". The
# bundle is a header ("cleanroom-bundle N", then each item's listing's and archive's
# sizes, a line each), then each item's listing and archive, one after another.
_BUNDLE = r"""
out=$1; cap=$2; fin=$3; fone=$4; bring=$5; shift 5
n=0; head=; files=
while [ $# -ge 2 ]; do
  l=$out.$n.l; a=$out.$n.a; fmt=$fone
  [ "$2" = folder ] && fmt=$fin
  sh -c "$bring" cleanroom "$1" "$l" "$a" "$cap" "$2" "$fmt" "$fone" || exit 1
  [ -f "$l" ] || : > "$l"
  [ -f "$a" ] || : > "$a"
  head="$head$(wc -c < "$l") $(wc -c < "$a")
"
  files="$files $l $a"
  n=$((n + 1)); shift 2
done
{ printf 'cleanroom-bundle %s\n%s' "$n" "$head"; cat $files; } > "$out"
rc=$?; rm -f $files; exit $rc
"""


class AgentWithheld(Exception):
    """The agent's environment did not give what a command of the harness's should have
    left there, though it answers: its programs (which ran the command) are the agent's."""


class Transfer:
    """Downloads and in-environment commands of one runtime's environments."""

    def __init__(self, bridge: Bridge, environments: Environments) -> None:
        self.bridge = bridge
        self.environments = environments
        self._lock = threading.Lock()

    def sh(
        self, held: Held, script: str, *args: str, user: str = "root", limit_s: int = EXEC_LIMIT_S
    ) -> tuple[int, str]:
        """Run ``script`` with ``args`` in ``held`` as ``user``: its exit code and output.
        `RuntimeUnavailable` when Harbor gets no answer (a command that outlasts its
        limit gives exit code None's stand-in, -1). In the agent's environment a command
        has `AGENT_COMMAND_LIMIT_S`, and once one outlasts it none runs there again: the
        agent's shell cannot hold the verification past its budget."""
        return self.sh_all(held, [(script, args)], user=user, limit_s=limit_s)

    def sh_all(
        self,
        held: Held,
        scripts: Sequence[tuple[str, Sequence[str]]],
        *,
        user: str = "root",
        limit_s: int = EXEC_LIMIT_S,
        chained: bool = False,
    ) -> tuple[int, str]:
        """`sh` for several scripts, one after another in one call: the last one's exit
        code, and what they all printed (``chained``: up to the first that fails, and
        its exit code). The files the run left in ``held`` (`Held.leftovers`) are
        removed first."""
        if held.agent:
            if held.unresponsive:
                return -1, ""
            limit_s = min(limit_s, AGENT_COMMAND_LIMIT_S)
        with self._lock:
            gone, held.leftovers = held.leftovers, []
        scripted = [
            shlex.join(["sh", "-c", script, "cleanroom", *args]) for script, args in scripts
        ]
        command = (" && " if chained else "; ").join(scripted)
        if gone:
            command = f"{shlex.join(['rm', '-f', '--', *gone])}; {command}"
        try:
            done = self.bridge.call(
                held.env.exec(command, user=user, timeout_sec=limit_s, cwd="/"),
                f"running a command in {held.id}",
                limit_s + 60,
            )
        except RuntimeUnavailable as exc:
            if outlasted_its_limit(exc):
                held.unresponsive = held.unresponsive or held.agent
                return -1, ""
            with self._lock:
                held.leftovers[:0] = gone
            raise
        return done.return_code, (done.stdout or "") + (done.stderr or "")

    def download(
        self, held: Held, source: str, target: Path, cap: int, *, keep_cut: bool = False
    ) -> bool:
        """Download ``source`` to ``target``; False past ``cap``, with ``target`` removed
        (or, ``keep_cut``, left as far as it came). In the agent's environment a download
        that fails while the environment answers is `AgentWithheld`; anywhere else, and
        when nothing answers, `RuntimeUnavailable`."""

        def stop() -> None:
            if not keep_cut:
                target.unlink(missing_ok=True)

        try:
            return self.bridge.watched(
                held.env.download_file(source, target),
                f"downloading {source} from {held.id}",
                lambda: _size(target) > cap,
                on_stop=stop,
            )
        except RuntimeUnavailable as exc:
            if held.agent and self.answers(held):
                raise AgentWithheld(f"{source}: {exc}"[:500]) from exc
            raise

    def answers(self, held: Held) -> bool:
        """Whether Harbor reaches ``held`` at all: a command gets an answer, whatever the
        answer (a shell the agent replaced gives one too), or outlasts its limit."""
        try:
            self.sh(held, "true", limit_s=30)
        except RuntimeUnavailable:
            return False
        return True

    def upload(self, held: Held, source: Path, target: str) -> None:
        self.bridge.call(held.env.upload_file(source, target), f"uploading to {held.id}")

    def upload_dir(self, held: Held, source: Path, target: str) -> None:
        self.bridge.call(held.env.upload_dir(source, target), f"uploading to {held.id}")

    def bring_back(
        self, held: Held, source: str, host_dir: Path, cap: int, *, folder: bool
    ) -> None:
        """Make ``source`` (a folder's entries, or one path) real in ``host_dir``. What
        the agent's environment withholds is brought back as nothing."""
        self.bring_back_all(held, [(source, host_dir, folder)], cap)

    def bring_back_all(
        self,
        held: Held,
        items: Sequence[tuple[str, Path, bool]],
        cap: int,
        before: Sequence[tuple[str, Sequence[str]]] = (),
    ) -> None:
        """Make each item's source (a folder's entries, or one path) real in its host
        folder: the scripts ``before`` and every listing and archive in one command,
        brought back by one download. What the agent's environment withholds is brought
        back as nothing."""
        try:
            self._bring_back_all(held, items, cap, before)
        except AgentWithheld:
            for _, host_dir, _ in items:
                materialize(host_dir, [], None, cap, None)

    def _bring_back_all(
        self,
        held: Held,
        items: Sequence[tuple[str, Path, bool]],
        cap: int,
        before: Sequence[tuple[str, Sequence[str]]],
    ) -> None:
        bundle = f"/.cleanroom-bring-{secrets.token_hex(6)}"
        args = [bundle, str(cap), _FORMAT_IN_FOLDER, _FORMAT_ONE, _BRING]
        args += [w for source, _, folder in items for w in (source, "folder" if folder else "one")]
        sources = ", ".join(source for source, _, _ in items)
        try:
            code, output = self.sh_all(held, [*before, (_BUNDLE, args)])
            if code != 0:
                why = f"listing {sources} in {held.id}: {output[-300:]!r}"
                raise AgentWithheld(why) if held.agent else RuntimeUnavailable(why)
            with tempfile.TemporaryDirectory(prefix="cleanroom-bring-") as spool:
                local = Path(spool) / "bundle"
                # An archive cut at its cap gives the files it holds whole.
                cap_all = (LISTING_CAP + ARCHIVE_CAP) * len(items) + len(items) * 64 + 64
                self.download(held, bundle, local, cap_all, keep_cut=True)
                try:
                    parts = unbundle(local, len(items), Path(spool), LISTING_CAP, ARCHIVE_CAP)
                except BundleError as exc:
                    why = f"bringing back {sources} from {held.id}: {exc}"
                    raise AgentWithheld(why) if held.agent else RuntimeUnavailable(why) from exc
                for (_, host_dir, _), (listing, archive) in zip(items, parts, strict=True):
                    materialize(host_dir, parse_records(listing), archive, cap, held.clock)
        finally:
            held.leftovers.append(bundle)

    def read(self, held: Held, path: str, cap: int) -> ObservedFile:
        """Observe ``path`` in ``held`` as `host_files.read_capped` observes a host file."""
        name = os.path.basename(path.rstrip("/")) or "root"
        with tempfile.TemporaryDirectory(prefix="cleanroom-read-") as spool:
            self.bring_back(held, path, Path(spool), cap, folder=False)
            records = os.listdir(spool)
            if not records:
                return ObservedFile.missing(path)
            return read_capped(Path(spool), records[0] if name not in records else name, path, cap)

    def entries(self, held: Held, paths: Sequence[str]) -> dict[str, Entry]:
        """What each of ``paths`` is in ``held``, from find's word on them: one command
        per `_ENTRIES_BATCH_BYTES` of names. A path find cannot stat is left out."""
        found: dict[str, Entry] = {}
        for batch in _batches([p for p in paths if p.startswith("/")]):
            code, output = self.sh(
                held, 'find "$@" -maxdepth 0 -printf "%y\\0%l\\0%p\\0" 2>/dev/null; true', *batch
            )
            if code != 0:
                raise RuntimeUnavailable(f"looking at {len(batch)} paths: exit {code}")
            fields = output.split("\0")
            for kind, target, path in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
                if kind == "l":
                    found[path] = Entry(EntryKind.LINK, target)
                elif kind:
                    found[path] = Entry(_FIND_KINDS.get(kind, EntryKind.OTHER))
        return found


def _batches(paths: Sequence[str]) -> list[list[str]]:
    """``paths`` in runs of at most `_ENTRIES_BATCH_BYTES` of names (a command line's room)."""
    batches: list[list[str]] = [[]]
    size = 0
    for path in paths:
        if batches[-1] and size + len(path) > _ENTRIES_BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(path)
        size += len(path) + 1
    return [b for b in batches if b]


def _size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0
