"""Containers on Harbor's environment interface: each "container" is a Harbor
environment, started by Harbor's factory or handed over by the harness.

What Docker's API does without running anything in a container is done here by commands
run as root through the environment's ``exec``. In an environment the agent acted in,
those commands are the agent's programs and what they say is the agent's data: stopping
its processes is best effort (the tests never run there), and only a call Harbor itself
cannot make is an infrastructure failure.
"""

from __future__ import annotations

import math
import shlex
import threading
import time
from collections.abc import Mapping, Sequence
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

    def _fresh(self, image: str) -> Held:
        with self._lock:
            spares = self._spares.get(image, [])
            if spares:
                return spares.pop()
        try:
            held = self.environments.fresh(image)
        except BaseException as exc:
            # Whoever waits for the image's pristine listing learns at once that none comes.
            self.environments.pristine_failed(image, exc)
            raise
        try:
            self._transfer_state.note_pristine(held)
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
        held = self._fresh(spec.image)
        held.environment = dict(spec.environment)
        self._bind(held, spec.binds, spec.read_only)
        return held.id

    def _bind(self, held: Held, binds: Mapping[Path, str], read_only: Sequence[str]) -> None:
        for host, dest in binds.items():
            mode = f"{host.stat().st_mode & 0o7777:o}"
            self._run_root(
                held, 'rm -rf -- "$1" && mkdir -p -- "$1" && chmod "$2" "$1"', dest, mode
            )
            if any(host.iterdir()):
                self.transfer.upload_dir(held, host, dest)
            else:
                held.binds[host] = dest
        if read_only:
            self._run_root(held, 'chown -R 0:0 -- "$@" && chmod -R a-w -- "$@"', *read_only)

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
        self._signal(held, "STOP")
        self._bring_back(held)

    def thaw(self, container: str) -> None:
        held = self.environments.get(container)
        self._signal(held, "CONT")

    def kill(self, container: str) -> None:
        """Kill every process but the environment's own (best effort: in the agent's
        environment the programs that do it are the agent's), and bring back the folders
        bound empty. An environment already removed is fine."""
        try:
            held = self.environments.get(container)
        except RuntimeUnavailable:
            return
        self._signal(held, "KILL")
        self._bring_back(held)

    def _signal(self, held: Held, signal: str) -> None:
        if held.own_pids is None:
            self.transfer.sh(held, _SIGNAL_ALL, signal, "", "")
        else:
            self.transfer.sh(held, _SIGNAL_ALL, signal, " ".join(map(str, held.own_pids)), "listed")

    def _bring_back(self, held: Held) -> None:
        for host, dest in held.binds.items():
            self.transfer.bring_back(held, dest, host, BIND_FILE_CAP, folder=True)

    def remove(self, container: str) -> None:
        """Stop and delete an environment this runtime made; forget the harness's."""
        self.environments.remove(container)

    def state(self, container: str) -> ServiceState:
        self.environments.get(container)
        return ServiceState("running", None, None)

    def logs_tail(self, container: str, lines: int = 20) -> str:
        return ""

    def close(self) -> None:
        """Stop the spares no run took."""
        with self._lock:
            spares = [h for held in self._spares.values() for h in held]
            self._spares.clear()
        for held in spares:
            self.environments.remove(held.id)


# Past this a file brought back from a bound folder is its size alone (the reward's and
# the witness's readers read far less).
BIND_FILE_CAP = 1 << 20
