"""Isolation test 12, channels: every route between environments that a sandbox closes,
probed from inside each environment, as its user, every window.

Every environment (the canary too: the probe is no action, and touches nothing the
canary watcher reads) first *plants* a token of its own in every channel class (System V
IPC, files in every folder it can write, TCP/UDP/Unix sockets on every loopback address,
its command line and environment, every privilege route into other homes, a kernel key
every user may view, a lock and a stream of opens on a file of the shared read-only tree,
a font folder for another's X server to read, its token in the byte ranges of locks
that ``/proc/locks`` lists, an AIO context whose size ``fs.aio-nr`` shows, a file of
the shared tree it keeps evicting from the page cache) and tries to reach the harness
(and the descriptors of a program of its own user, as the harness starts them); then
every environment *collects* from all of them. The rows follow `core.channels`: a
token of another environment found is ``cross``, a class whose collector did not find
its own token is ``lost``.

Leaks it must catch: ``open-host`` (env01 and env02 without sandboxes, the run folder
readable), which opens every class between those two; ``unfiltered`` (their sandboxes
without the system call filter), which opens kernel keys: a key has no namespace, so
every environment's ``/proc/keys`` lists it; ``x-server-outside`` (their displays'
servers on the host as root), which opens the X server's reads: each asks its own
server to add the other's font folder to its font path and gets the name planted
there; ``shared-inodes`` (their sandboxes on
the host's own files, not an overlay each), which opens locks and watches: a lock or a
watch is on an inode, and the two see the same one; and ``unlimited`` (their sandboxes
without limits), which the limit probe sees: each environment's probe reads what its
own cgroup, tmpfs mounts, every other place it can write and its ``devpts`` let it
take, and one that may take more than the pool's limits can take it from every other
(its rows to all are ``cross``). Without the filter, AIO, the page cache and other
processes' descriptors open too (``fs.aio-nr`` is listed again with it); and
``unmasked-proc`` (``/proc/locks``, ``fs.aio-nr`` and the machine's counts listed in
the sandboxes) opens the locks' byte ranges and the pty and open-file counts.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from cleanroom.core.channels import (
    NAME,
    CollectReport,
    Limits,
    PlantReport,
    channel_rows,
    limit_rows,
)
from cleanroom.core.isolation import IsolationRow
from cleanroom.environments.errors import PoolError
from cleanroom.environments.interface import (
    CONTROL_FONT_NAME,
    CONTROL_FONTS,
    Desktops,
    Needs,
    Places,
    SandboxLimits,
    Started,
)
from cleanroom.environments.leaky_setups import Leak
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.lifecycle import wait_until

PROBE_SOURCE = Path(__file__).with_name("channel_probe.py")
PORT_BASE = 47_100
PLANT_WITHIN_S = 90.0
COLLECT_WITHIN_S = 120.0
HOLD_S = 300


class ChannelsCheck(IsolationCheck):
    """Plant a token in every channel from every environment, then collect everywhere."""

    name: ClassVar[str] = NAME
    number: ClassVar[int] = 12
    schedule: ClassVar[Schedule] = Schedule(window=1, soak=1)
    detects: ClassVar[tuple[Leak, ...]] = (
        Leak.OPEN_HOST,
        Leak.UNFILTERED,
        Leak.SHARED_INODES,
        Leak.UNLIMITED,
        Leak.X_SERVER_OUTSIDE,
        Leak.UNMASKED_PROC,
    )
    requires: ClassVar[Needs] = Needs(real_desktops=True, commands=True)

    def pairs(self, ctx: TrialContext) -> list[tuple[str, str]]:
        names = ctx.pool.names
        return [(a, b) for a in names for b in names if a != b]

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        pool = ctx.pool
        names = pool.names
        places = {n: pool.places(n) for n in names}
        tokens = {n: ctx.mint(n) for n in names}
        sentinel = _Sentinel()  # a harness service on the host's loopback, like the pool API
        base = _base_config(ctx, places)
        base["control_ports"]["harness-loopback"] = {"port": sentinel.port}
        plants: dict[str, PlantReport] = {}
        started: dict[str, tuple[Started, Path]] = {}
        try:
            for n in names:
                cfg = {**base, **_own_config(pool, n, str(tokens[n]))}
                try:
                    started[n] = pool.start_inside(
                        n, _probe_argv(pool, n, "plant", cfg), "channel-plant"
                    )
                except PoolError as exc:
                    plants[n] = PlantReport(n, error=str(exc))
            for n, (proc, log) in started.items():
                plants[n] = _await_plant(n, proc, log)
            collects = {n: _collect(pool, n, {**base, **_own_config(pool, n, "")}) for n in names}
        finally:
            for n, (proc, _) in started.items():
                # SIGTERM lets the plant remove what it made outside a sandbox.
                with contextlib.suppress(PoolError):
                    pool.end_inside(n, proc, grace_s=5.0)
            sentinel.close()
        ctx.write_evidence(
            NAME,
            trial,
            "channels.json",
            {
                "tokens": {n: str(t) for n, t in tokens.items()},
                "plants": {n: vars(p) for n, p in plants.items()},
                "collects": {n: vars(c) for n, c in collects.items()},
            },
        )
        allowed = {n: _allowed(pool.limits_for(n)) for n in names}
        return [
            *channel_rows(trial, ctx.window, names, plants, collects),
            *limit_rows(trial, ctx.window, names, plants, allowed),
        ]


def _allowed(limits: SandboxLimits) -> Limits:
    mib = 1024 * 1024
    return Limits(
        memory_bytes=limits.memory_mib * mib,
        pids=limits.pids,
        cpu_shares=limits.cpu_shares,
        tmpfs_bytes=limits.tmpfs_mib * mib,
        home_bytes=limits.home_mib * mib,
        ptys=limits.ptys,
    )


class _Sentinel:
    """A listener on the host's 127.0.0.1 for the length of a trial: a stand-in for every
    harness service there (the pool's API among them), which no environment may reach."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        threading.Thread(target=self._accept, name="channels-sentinel", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            conn.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()


def _base_config(ctx: TrialContext, places: dict[str, Places]) -> dict[str, Any]:
    # The pool's API is never to be reached from an environment; the verify server is
    # (its pages are forwarded in), but its keyed routes must refuse a caller with no key.
    control: dict[str, dict[str, Any]] = {}
    with contextlib.suppress(OSError, ValueError, KeyError):
        pool_port = int(json.loads((ctx.run_dir / "pool.json").read_text())["port"])
        control["pool"] = {"port": pool_port}
    if ctx.verify is not None:
        port = urlsplit(ctx.verify.base_url).port
        if port:
            control["verify"] = {"port": port, "keyed_path": "/v1/audit?window=0"}
    return {
        "envs": list(places),
        "users": {n: p.user for n, p in places.items()},
        "homes": {n: str(p.home) for n, p in places.items()},
        "port_base": PORT_BASE,
        "control_ports": control,
        "run_folder": str(ctx.run_dir),
        "hold_s": HOLD_S,
        "x_control_fonts": str(CONTROL_FONTS),
        "x_control_font": CONTROL_FONT_NAME,
    }


def _own_config(pool: Desktops, name: str, token: str) -> dict[str, Any]:
    places = pool.places(name)
    return {
        "me": name,
        "token": token,
        "home": str(places.home),
        "runtime_dir": str(places.runtime_dir),
    }


def _probe_argv(pool: Desktops, name: str, mode: str, cfg: dict[str, Any]) -> list[str]:
    return [pool.python(name), "-I", "-c", PROBE_SOURCE.read_text(), mode, json.dumps(cfg)]


def _await_plant(name: str, proc: Started, log: Path) -> PlantReport:
    def answered() -> PlantReport | None:
        line = _first_json_line(log)
        if line is not None:
            return PlantReport(name, line.get("planted", {}), line.get("reached", []))
        if proc.poll() is not None:
            return PlantReport(name, error=f"the plant step exited with {proc.returncode}: "
                               f"{_tail(log)}")  # fmt: skip
        return None

    report = wait_until(answered, PLANT_WITHIN_S, 0.1)
    if report is None:
        return PlantReport(name, error=f"no answer within {PLANT_WITHIN_S:g} s: {_tail(log)}")
    return report


def _collect(pool: Desktops, name: str, cfg: dict[str, Any]) -> CollectReport:
    try:
        done = pool.run_inside(name, _probe_argv(pool, name, "collect", cfg), COLLECT_WITHIN_S)
    except Exception as exc:
        return CollectReport(name, error=f"{type(exc).__name__}: {exc}")
    code, out = done.code, done.output
    for line in out.splitlines():
        with contextlib.suppress(ValueError):
            data = json.loads(line)
            if isinstance(data, dict) and "found" in data:
                return CollectReport(name, data["found"], data.get("tested", {}))
    return CollectReport(name, error=f"exit code {code}, no report: {out[-300:]}")


def _first_json_line(log: Path) -> dict[str, Any] | None:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            data = json.loads(line)
            if isinstance(data, dict) and "planted" in data:
                return data
    return None


def _tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-300:]
    except OSError:
        return "(no output)"
