"""Containers on Harbor's environment interface: each "container" is a Harbor
environment, started by Harbor's factory or handed over by the harness.

What Docker's API does without running anything in a container is done here by commands
run as root through the environment's ``exec``. In an environment the agent acted in,
those commands are the agent's programs and what they say is the agent's data: stopping
its processes is best effort (the tests never run there), and only a call Harbor itself
cannot make is an infrastructure failure.
"""

from __future__ import annotations

import contextlib
import math
import posixpath
import secrets
import shlex
import tarfile
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Unpack

from cleanroom.docker_layer import OUTPUT_CAP_BYTES
from cleanroom.exec_result import ExecResult
from cleanroom.verifiers.container.decision.name_files import NameFiles
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, ServiceState
from cleanroom.verifiers.container.runtime.harbor.bridge import CALL_LIMIT_S, outlasted_its_limit
from cleanroom.verifiers.container.runtime.harbor.environments import Environments, Held
from cleanroom.verifiers.container.runtime.harbor.files import Transfer
from cleanroom.verifiers.container.runtime.harbor.state import HarborStateTransfer
from cleanroom.verifiers.container.runtime.records import (
    AgentContainerSpec,
    ExecOptions,
    VerifierContainerSpec,
)
from cleanroom.verifiers.container.task.compose_model import Service

# Signals every process but the environment's own, this shell and its ancestors (the
# provider's processes that run the command: a sandbox's daemon is one), until none is
# left (KILL) or once (STOP, CONT). Zombies are gone already. $1 the signal, $2 the
# environment's own processes as listed when it started ($3 "listed"); without one (the
# harness's environment), its own are PID 1 and what started within 2 s of it (100
# ticks a second). A process cannot make its start earlier than it was.
_SIGNAL_ALL = r"""
sig=$1; listed=$3
keep=" 1 $$ $2 "
p=$$
while [ "$p" -gt 1 ] 2>/dev/null; do
  read -r s < /proc/$p/stat || break
  s=${s##*) }
  set -- $s
  p=$2
  keep="$keep$p "
done
limit=
if [ "$listed" != listed ]; then
  read -r s < /proc/1/stat && s=${s##*) } && set -- $s && limit=$((${20} + 200))
fi
rounds=1
[ "$sig" = KILL ] && rounds=50
i=0
while [ $i -lt $rounds ]; do
  i=$((i + 1))
  left=0
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$keep" in *" $p "*) continue;; esac
    read -r s < "$d/stat" 2>/dev/null || continue
    s=${s##*) }
    case $s in Z*|X*) continue;; esac
    if [ -n "$limit" ]; then
      set -- $s
      [ "${20}" -le "$limit" ] 2>/dev/null && continue
    fi
    kill -s "$sig" "$p" 2>/dev/null && left=1
  done
  [ $left = 0 ] && exit 0
  [ "$sig" = KILL ] && sleep 0.1
done
[ "$sig" = KILL ] && exit 1
exit 0
"""

# What a command prints is kept in the environment and only its head comes back: Harbor
# holds a command's whole output in memory.
_CAPPED = (
    '{{ {command}\n}} > "$__cr_out" 2>&1; __cr_rc=$?; '
    'head -c {cap} "$__cr_out"; rm -f "$__cr_out"; exit $__cr_rc'
)
_NOT_ON_THIS_PATH = (
    "is not carried on Harbor's generic environment interface (it needs a container "
    "daemon on this machine: cleanroom's Docker path)"
)


def unavailable(what: str) -> RuntimeUnavailable:
    """A call this runtime cannot make at all (nothing answered it). A run checks the
    runtime's capabilities first (`run.capability_check`), so only a caller that did not
    meets this."""
    return RuntimeUnavailable(f"{what} {_NOT_ON_THIS_PATH}")


class HarborContainers:
    """`Containers` on Harbor environments."""

    def __init__(
        self, environments: Environments, transfer: Transfer, state: HarborStateTransfer
    ) -> None:
        self.environments = environments
        self.transfer = transfer
        self._transfer_state = state
        self._spares: dict[str, list[Held]] = {}
        self._lock = threading.Lock()

    # Fresh environments ----------------------------------------------------------------

    def _fresh(
        self, image: str, binds: Mapping[Path, str] | None = None, read_only: Sequence[str] = ()
    ) -> Held:
        """A fresh environment of ``image`` (a spare, or started now), the host folders of
        ``binds`` copied in. One started now is listed as the pristine image's unless one
        has been, and gets its folders, in the call that first looks at it."""
        with self._lock:
            spares = self._spares.get(image, [])
            spare = spares.pop() if spares else None
        if spare is not None:
            if binds:
                self._bind(spare, binds, read_only)
            return spare
        pristine = self.environments.pristine(image)
        listed_at, listing = (
            (None, "") if pristine.done() else self._transfer_state.listing_command()
        )
        with tempfile.TemporaryDirectory(prefix="cleanroom-binds-") as spool:
            plan = _bind_plan(binds or {}, read_only, Path(spool))
            try:
                held = self.environments.fresh(
                    image, then="\n".join(filter(None, [listing, plan.command])), upload=plan.upload
                )
            except BaseException as exc:
                # Whoever waits for the image's pristine listing learns at once that none comes.
                self.environments.pristine_failed(image, exc)
                raise
        try:
            code, said = held.first_said
            if plan.command and code != 0:
                raise RuntimeUnavailable(f"preparing {held.id}: {said[-300:]!r}")
            held.binds.update(plan.brought_back)
            self._transfer_state.note_pristine(held, listed_at)
        except BaseException as exc:
            self.environments.pristine_failed(image, exc)
            self.environments.remove(held.id)
            raise
        return held

    def workdir(self, image: str) -> str | None:
        """The working folder of ``image``'s environment, as a fresh one reports it (one
        is started now, and kept as a spare for the next environment of the image, when
        none has been)."""
        if image not in self.environments.workdirs:
            held = self._fresh(image)
            with self._lock:
                self._spares.setdefault(image, []).append(held)
        return self.environments.workdirs.get(image)

    def start_agent(self, spec: AgentContainerSpec) -> str:
        """A fresh environment for the agent; what the image holds at ``logs_hidden``
        removed, the host folders of ``binds`` copied in (a folder bound empty is brought
        back to the host when the environment's processes are stopped)."""
        if spec.services_network is not None:
            raise unavailable("an agent beside compose services")
        held = self._fresh(spec.image)
        held.agent = True
        held.environment = dict(spec.environment)
        if spec.logs_hidden:
            self._run_root(held, 'rm -rf -- "$@" && mkdir -p -- "$@"', *spec.logs_hidden)
        if spec.binds:
            self._bind(held, spec.binds, ())
        return held.id

    def start_verifier(self, spec: VerifierContainerSpec) -> str:
        """A fresh environment of the pristine image for the verifier, the host folders
        of ``binds`` copied in (``read_only`` ones owned by root and not writable). Its
        network is what the task's environment gives Harbor's."""
        if spec.join_network_of is not None:
            raise unavailable("a verifier in the agent's network namespace (live_processes)")
        if spec.services_network is not None:
            raise unavailable("a verifier beside compose services")
        held = self._fresh(spec.image, spec.binds, spec.read_only)
        held.environment = dict(spec.environment)
        return held.id

    def _bind(self, held: Held, binds: Mapping[Path, str], read_only: Sequence[str]) -> None:
        """The host folders of ``binds`` copied into ``held``: one upload and one command."""
        with tempfile.TemporaryDirectory(prefix="cleanroom-binds-") as spool:
            plan = _bind_plan(binds, read_only, Path(spool))
            if plan.upload is not None:
                self.transfer.upload(held, *plan.upload)
            self._run_root(held, plan.command)
        held.binds.update(plan.brought_back)

    def _run_root(self, held: Held, script: str, *args: str) -> None:
        code, output = self.transfer.sh(held, script, *args)
        if code != 0:
            raise RuntimeUnavailable(f"preparing {held.id}: {output[-300:]!r}")

    def start_service(self, service: Service, image: str, network: str, public: bool) -> str:
        raise unavailable(f"compose service {service.name!r}")

    def name_files(self, container: str) -> NameFiles:
        """Only a verifier in the agent's network namespace needs them, and Harbor's
        environments cannot start one (its `capabilities` say so): a fresh environment
        has name files of its own."""
        raise unavailable("the name files of a verifier in the agent's network namespace")

    # Commands --------------------------------------------------------------------------

    def exec(
        self, container: str, argv: Sequence[str], **options: Unpack[ExecOptions]
    ) -> ExecResult:
        """Run through Harbor's ``exec``; only the head of the output comes back."""
        held = self.environments.get(container)
        timeout, cap = options.get("timeout"), options.get("cap", OUTPUT_CAP_BYTES)
        merged = {**held.environment, **(options.get("env") or {})}
        merged["__cr_out"] = f"/tmp/.cleanroom-out-{time.monotonic_ns()}"
        command = _CAPPED.format(command=shlex.join(argv), cap=cap)
        limit = math.ceil(timeout) if timeout else None
        started = time.monotonic()
        try:
            done = self.transfer.bridge.call(
                held.env.exec(
                    command,
                    cwd=options.get("workdir"),
                    env=merged,
                    timeout_sec=limit,
                    user=options.get("user"),
                ),
                f"running {argv[0] if argv else 'a command'} in {container}",
                (limit or CALL_LIMIT_S) + 60,
            )
        except RuntimeUnavailable as exc:
            if timeout is not None and outlasted_its_limit(exc):
                return ExecResult(None, timed_out=True, seconds=time.monotonic() - started)
            raise
        out = ((done.stdout or "") + (done.stderr or "")).encode("utf-8", "surrogateescape")
        out = out[:cap]
        return ExecResult(
            done.return_code, stdout=out, output=out, seconds=time.monotonic() - started
        )

    def put_dir(self, container: str, source: Path, dest: str) -> None:
        held = self.environments.get(container)
        self._run_root(held, 'mkdir -p -- "$1"', dest)
        self.transfer.upload_dir(held, source, dest)

    # Stopping --------------------------------------------------------------------------

    def lift_cpu_limit(self, container: str) -> None:
        """Harbor's environments keep the limits they were started with."""

    def limit_cpus(self, container: str, cpus: float) -> None:
        """Harbor's environments keep the limits they were started with."""

    def freeze(self, container: str) -> None:
        """Stop (SIGSTOP) every process but the environment's own, and bring back the
        folders bound empty."""
        held = self.environments.get(container)
        self._signal_and_bring_back(held, "STOP")

    def thaw(self, container: str) -> None:
        held = self.environments.get(container)
        script, args = self._signal(held, "CONT")
        self.transfer.sh(held, script, *args)

    def kill(self, container: str) -> None:
        """Kill every process but the environment's own (best effort: in the agent's
        environment the programs that do it are the agent's), and bring back the folders
        bound empty. An environment already removed is fine."""
        try:
            held = self.environments.get(container)
        except RuntimeUnavailable:
            return
        self._signal_and_bring_back(held, "KILL")

    def _signal(self, held: Held, signal: str) -> tuple[str, list[str]]:
        """The script that sends ``signal`` to ``held``'s processes, and its arguments."""
        if held.own_pids is None:
            return _SIGNAL_ALL, [signal, "", ""]
        return _SIGNAL_ALL, [signal, " ".join(map(str, held.own_pids)), "listed"]

    def _signal_and_bring_back(self, held: Held, signal: str) -> None:
        """Signal ``held``'s processes and bring back the folders bound empty, in one
        command and one download."""
        if not held.binds:
            script, args = self._signal(held, signal)
            self.transfer.sh(held, script, *args)
            return
        items = [(dest, host, True) for host, dest in held.binds.items()]
        self.transfer.bring_back_all(held, items, BIND_FILE_CAP, [self._signal(held, signal)])

    def remove(self, container: str) -> None:
        """Stop and delete an environment this runtime made; forget the harness's."""
        self.environments.remove(container)

    def state(self, container: str) -> ServiceState:
        self.environments.get(container)
        return ServiceState("running", None, None)

    def logs_tail(self, container: str, lines: int = 20) -> str:
        return ""

    def close(self) -> None:
        """Stop the spares no run took; remove what the run left in the environments it
        does not stop."""
        with self._lock:
            spares = [h for held in self._spares.values() for h in held]
            self._spares.clear()
        for held in spares:
            self.environments.remove(held.id)
        for held in self.environments.all():
            if not held.owned and held.leftovers:
                with contextlib.suppress(RuntimeUnavailable):
                    self.transfer.sh(held, "true")


@dataclass(frozen=True)
class BindPlan:
    """Host folders to copy into an environment: the archive of their files to upload
    (a host file and its path there; None when there are none), the command that makes
    the folders and unpacks it, and the folders bound empty, to bring back."""

    upload: tuple[Path, str] | None
    command: str
    brought_back: dict[Path, str]


# $1 the archive ("" for none), then pairs of a folder and its mode, "--", then the
# folders made read-only.
_BIND = r"""
all=$1; shift
while [ "$1" != -- ]; do
  rm -rf -- "$1" && mkdir -p -- "$1" && chmod "$2" "$1" || exit 1
  shift 2
done
shift
if [ -n "$all" ]; then
  tar -C / --numeric-owner -xpf "$all"; rc=$?; rm -f -- "$all"
  [ $rc = 0 ] || exit $rc
fi
[ $# = 0 ] || { chown -R 0:0 -- "$@" && chmod -R a-w -- "$@"; }
"""


def _bind_plan(binds: Mapping[Path, str], read_only: Sequence[str], spool: Path) -> BindPlan:
    """How to copy ``binds`` into an environment in one upload and one command: the
    files of every folder that has any in one archive made in ``spool``, owned by root."""
    if not binds:
        return BindPlan(None, "", {})
    inside = f"/.cleanroom-binds-{secrets.token_hex(6)}.tar"
    args: list[str] = []
    carried: dict[Path, str] = {}
    empty: dict[Path, str] = {}
    for host, dest in binds.items():
        args += [dest, f"{host.stat().st_mode & 0o7777:o}"]
        (carried if any(host.iterdir()) else empty)[host] = dest
    upload = None
    if carried:
        local = spool / "binds.tar"
        with tarfile.open(local, "w", format=tarfile.GNU_FORMAT) as tar:
            for host, dest in carried.items():
                for child in sorted(host.iterdir()):
                    arcname = posixpath.join(dest.lstrip("/"), child.name)
                    tar.add(child, arcname=arcname, filter=_owned_by_root)
        upload = (local, inside)
    command = shlex.join(
        ["sh", "-c", _BIND, "cleanroom", inside if upload else "", *args, "--", *read_only]
    )
    return BindPlan(upload, command, empty)


def _owned_by_root(member: tarfile.TarInfo) -> tarfile.TarInfo:
    member.uid = member.gid = 0
    member.uname = member.gname = "root"
    return member


# Past this a file brought back from a bound folder is its size alone (the reward's and
# the witness's readers read far less).
BIND_FILE_CAP = 1 << 20
