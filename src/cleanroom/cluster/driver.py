"""The driver of a run across the nodes of a Ray cluster (``cleanroom run --ray``).

On every node that declares `DESKTOPS_RESOURCE`, one `NodeActor` starts the node's own
share of the run (`node_run`): its verify server, pool, parked console, positive control
and canary, exactly as on one machine. A window spans all nodes: the driver opens it in
the run database, every node runs its share, and the window closes ``failed`` when any
node's share failed or was lost. While windows run, a thread pulls what changed in every
node's database into the driver's (`RunStore.copy_from_node`), each record kept with
the node it came from, so a slow node's records arrive later but arrive; a pull that
timed out is asked again from the same place.

A node lost mid-run (its machine or its Ray process died, or it was cut off): its
rollouts still open become ``invalid (interrupted)``, its share of the window is
``lost``, with a ``lost`` row of every planned check, which fails the window; every
other node's records are kept, and the run goes on with the nodes left, or stops when
asked to (``on_node_loss="stop"``). After the last window every node left runs the
end-of-run sweep and its own controls, and the report gives each node's number and the
merged one (`core.publish.publish_across_nodes`).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from cleanroom.cluster.actor import start_actor
from cleanroom.cluster.evidence import keep_evidence
from cleanroom.cluster.node_run import NodeSettings, node_folder
from cleanroom.core.isolation import CANARY_TEST, PARKED_CONSOLE_TEST, SWEEP_TEST
from cleanroom.harness.form_audit_rows import AUDIT_TEST
from cleanroom.harness.loop import HARNESS_ERROR
from cleanroom.harness.stopping import StopRequested, stop_on_signals
from cleanroom.ray_cluster.session import (
    DESKTOPS_RESOURCE,
    RayNode,
    first_line,
    joined,
    require_nodes,
)
from cleanroom.reports.machine import machine_info
from cleanroom.store.node_records import Cursor
from cleanroom.store.rundb import RunStore

ON_NODE_LOSS = ("continue", "stop")
ALWAYS_CHECKED = (CANARY_TEST, PARKED_CONSOLE_TEST, SWEEP_TEST, AUDIT_TEST)
# The most acting environments one node's pool holds.
MAX_ENVS_PER_NODE = 32


@dataclass(frozen=True)
class ClusterConfig:
    """What ``cleanroom run --ray`` and ``cleanroom soak --ray`` set."""

    address: str
    run_dir: Path
    settings: NodeSettings
    windows: int | None = 1  # None: windows until ``hours`` have passed
    hours: float | None = None
    on_node_loss: str = "continue"
    pull_every_s: float = 2.0
    pull_timeout_s: float = 60.0
    job: str = "run"
    # Adjusts one node's settings before it starts (nodes unlike the others).
    for_node: Callable[[RayNode, NodeSettings], NodeSettings] | None = None

    def __post_init__(self) -> None:
        if (self.windows is None) == (self.hours is None):
            raise ValueError("give either a number of windows or a number of hours")
        if self.on_node_loss not in ON_NODE_LOSS:
            raise ValueError(f"on_node_loss: choose one of {', '.join(ON_NODE_LOSS)}")


@dataclass
class ClusterResult:
    """How the run ended: ``finished``, ``interrupted`` or ``failed``."""

    run_dir: Path
    status: str = "running"
    windows: dict[int, str] = field(default_factory=dict)
    lost: dict[str, str] = field(default_factory=dict)  # node: why
    error: str | None = None
    exit_code: int = 0


@dataclass
class _Node:
    ray_node: RayNode
    actor: Any
    cursor: Cursor = field(default_factory=Cursor)
    evidence: dict[str, tuple[int, int]] = field(default_factory=dict)  # files copied
    alive: bool = True
    pulling: threading.Lock = field(default_factory=threading.Lock)

    @property
    def name(self) -> str:
        return self.ray_node.name


class NodeLost(Exception):
    """A node's actor died (its node or its Ray process) or its harness raised."""

    def __init__(self, why: str, status: str = "lost") -> None:
        super().__init__(why)
        self.why = why
        self.status = status


def run_across_nodes(config: ClusterConfig, console: Console) -> ClusterResult:
    """Run ``config`` on the cluster into ``config.run_dir`` (created); never raises for a
    stop signal. Raises `RayUnavailable` when the cluster cannot be joined or has no node
    declaring desktops."""
    config.settings.plan()  # an unknown check is refused before the cluster is joined
    with joined(config.address, f"{config.job} --ray") as ray:
        ray_nodes = require_nodes(ray, config.address, DESKTOPS_RESOURCE)
        driver = _Driver(ray, config, console)
        return driver.run(ray_nodes)


class _Driver:
    def __init__(self, ray: Any, config: ClusterConfig, console: Console) -> None:
        self.ray = ray
        self.config = config
        self.console = console
        self.nodes: dict[str, _Node] = {}
        # The checks of every node's window: the planned tests and the ones each window
        # runs whatever the plan (the canary, the parked console, the sweep, the audit).
        self.planned = config.settings.plan()
        planned = [p.name for p in self.planned]
        self.plan = [*planned, *(c for c in ALWAYS_CHECKED if c not in planned)]
        self.stopping = threading.Event()
        self.store: RunStore | None = None

    def say(self, text: str) -> None:
        self.console.print(text, highlight=False)

    # -- the run ------------------------------------------------------------------------

    def run(self, ray_nodes: list[RayNode]) -> ClusterResult:
        c = self.config
        meta = {
            "job": c.job,
            "machine": machine_info(),
            "config": {
                **c.settings.model_dump(mode="json"),
                "address": c.address,
                "windows": c.windows,
                "hours": c.hours,
                "on_node_loss": c.on_node_loss,
            },
            "tests": {p.name: p.trials for p in self.planned},
            "cluster": {"nodes": [n.name for n in ray_nodes]},
        }
        store = RunStore.create(c.run_dir, meta=meta)
        self.store = store
        result = ClusterResult(store.run_dir)
        puller = threading.Thread(target=self._pull_loop, daemon=True, name="node-pulls")
        with stop_on_signals(self.stopping):
            try:
                self._start_nodes(ray_nodes)
                puller.start()
                self._windows(result)
                if self._alive():
                    self._after_windows(result)
                if result.status == "running":
                    result.status = "finished"
            except StopRequested as stop:
                result.status, result.exit_code = "interrupted", stop.exit_code
                self.say(f"[bold red]{stop.signal_name}[/]: stopping every node")
            except Exception as exc:  # recorded as failed, with the traceback
                result.status, result.exit_code = "failed", 1
                result.error = f"{type(exc).__name__}: {exc}"
                (store.run_dir / HARNESS_ERROR).write_text(traceback.format_exc())
                self.say(f"[bold red]driver fault[/]: {result.error}")
            finally:
                self.stopping.set()
                self._stop_nodes(result.status)
                if puller.is_alive():
                    puller.join(timeout=c.pull_timeout_s)
                store.end(result.status)
        return result

    def _start_nodes(self, ray_nodes: list[RayNode]) -> None:
        store = self._store()
        settings = self.config.settings
        refs = {}
        for ray_node in ray_nodes:
            envs = min(ray_node.units(DESKTOPS_RESOURCE), MAX_ENVS_PER_NODE)
            mine = settings.changed(envs=envs)
            if self.config.for_node is not None:
                mine = self.config.for_node(ray_node, mine)
            actor = start_actor(self.ray, ray_node, mine)
            node = _Node(ray_node, actor)
            self.nodes[node.name] = node
            store.add_node(
                node.name,
                node_id=ray_node.node_id,
                host=ray_node.host,
                envs=mine.envs,
                run_dir=str(node_folder(mine, node.name)),
            )
            refs[node.name] = actor.start.remote()
            self.say(f"node {node.name}: starting a pool of {mine.envs} environment(s)")
        for name, end in self._wait_all(refs, "start").items():
            if isinstance(end, NodeLost):
                self._lose(name, None, NodeLost(f"it could not start: {end.why}", "failed"))
            else:
                fired = {True: "fired", False: "did not fire", None: "could not run"}
                self.say(f"node {name}: ready; positive control {fired[end.control_fired]}")
        if not self._alive():
            raise RuntimeError("no node could start its share of the run")

    def _windows(self, result: ClusterResult) -> None:
        c = self.config
        store = self._store()
        deadline = None if c.hours is None else time.monotonic() + c.hours * 3600
        index = 1
        while self._alive() and not self.stopping.is_set():
            if c.windows is not None and index > c.windows:
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            store.open_window(index)
            self.say(f"window {index} opened on {len(self._alive())} node(s)")
            refs = {n.name: n.actor.run_window.remote(index) for n in self._alive()}
            lost_here = False
            for name, end in self._wait_all(refs, f"window {index}").items():
                if isinstance(end, NodeLost):
                    self._lose(name, index, end)
                    result.lost[name] = end.why
                    lost_here = True
                else:
                    self.say(
                        f"node {name}: window {index} {end.status}"
                        + (f" ({end.failure})" if end.failure else "")
                    )
            self._catch_up(index, 2 * c.pull_timeout_s)
            status = self._window_status(index)
            store.close_window(index, status=status)
            result.windows[index] = status
            self.say(f"window {index} {status}")
            if lost_here and c.on_node_loss == "stop":
                result.status, result.exit_code = "failed", 1
                result.error = "a node was lost and the run was asked to stop (--on-node-loss stop)"
                return
            index += 1
        if not self._alive():
            result.status, result.exit_code = "failed", 1
            result.error = "every node was lost"

    def _after_windows(self, result: ClusterResult) -> None:
        store = self._store()
        last = max(result.windows, default=None)
        refs = {n.name: n.actor.end_of_run.remote() for n in self._alive()}
        for name, end in self._wait_all(refs, "the end-of-run sweep").items():
            if isinstance(end, NodeLost):
                self._lose(name, None, end)
                result.lost[name] = end.why
        self._catch_up(None, 2 * self.config.pull_timeout_s)
        closed = last is not None and result.windows[last] == "closed"
        if last is not None and closed and self._window_status(last) == "failed":
            store.fail_window(last)
            result.windows[last] = "failed"
            self.say(f"window {last} failed after its close (the end-of-run sweep)")
        if not self.config.settings.leaky_controls:
            return
        refs = {n.name: n.actor.own_controls.remote() for n in self._alive()}
        for name, end in self._wait_all(refs, "the run's own controls").items():
            if isinstance(end, NodeLost):
                self._lose(name, None, end)
                result.lost[name] = end.why
            else:
                for line in end:
                    self.say(f"node {name}: {line}")
        self._catch_up(None, 2 * self.config.pull_timeout_s)

    def _window_status(self, index: int) -> str:
        shares = self._store().node_window_statuses(index)
        return "closed" if shares and all(s == "closed" for s in shares.values()) else "failed"

    # -- calls on every node ------------------------------------------------------------

    def _wait_all(self, refs: dict[str, Any], what: str) -> dict[str, Any]:
        """Wait for one call on every node; a node whose call failed gets `NodeLost`."""
        from ray.exceptions import RayActorError, RayError, RayTaskError

        ends: dict[str, Any] = {}
        pending = {ref: name for name, ref in refs.items()}
        while pending:
            ready, _ = self.ray.wait(list(pending), num_returns=1, timeout=1.0)
            for ref in ready:
                name = pending.pop(ref)
                try:
                    ends[name] = self.ray.get(ref)
                except RayTaskError as exc:
                    if isinstance(exc.cause, RayActorError):
                        ends[name] = NodeLost(f"during {what}: {first_line(exc.cause)}")
                    else:
                        ends[name] = NodeLost(
                            f"its harness failed during {what}: {str(exc)[-1500:]}", "failed"
                        )
                except RayError as exc:  # the actor, its worker or its node is gone
                    ends[name] = NodeLost(f"during {what}: {first_line(exc)}")
        return ends

    def _lose(self, name: str, window: int | None, lost: NodeLost) -> None:
        node = self.nodes[name]
        node.alive = False
        # Whatever the node's database still holds that was not pulled is gone with it:
        # one last pull, in case only its harness failed and its actor still answers.
        self._pull(node, timeout_s=10.0)
        interrupted = self._store().lose_node(name, window, self.plan, lost.why, lost.status)
        where = f" in window {window}" if window is not None else ""
        self.say(
            f"[bold red]node {name} {lost.status}{where}[/]: {lost.why}; "
            f"{interrupted} rollout(s) invalid (interrupted)"
            + ("; the window fails" if window is not None else "")
        )
        self.ray.kill(node.actor, no_restart=True)

    def _alive(self) -> list[_Node]:
        return [n for n in self.nodes.values() if n.alive]

    def _stop_nodes(self, status: str) -> None:
        alive = self._alive()
        # Nothing a node recorded is left behind when it stops: it is waited for (less
        # long when the run was interrupted).
        patience = 5 if status == "finished" else 1
        self._catch_up(None, patience * self.config.pull_timeout_s)
        node_status = "finished" if status == "finished" else status
        refs = {n.name: n.actor.stop.remote(node_status) for n in alive}
        for name, end in self._wait_all(refs, "stopping").items():
            if isinstance(end, NodeLost):
                self.say(f"[red]node {name} did not stop cleanly[/]: {end.why}")
        # What a node wrote while it stopped (a watcher's last sample, its run's end) comes
        # after the catch-up above: one more pull from each before it goes.
        for node in alive:
            self._pull(node, self.config.pull_timeout_s)
        self._wait_all({n.name: n.actor.close.remote() for n in alive}, "closing")
        for node in alive:
            self._store().end_node(node.name, "finished" if status == "finished" else status)
            self.ray.kill(node.actor, no_restart=True)
            node.alive = False

    # -- pulling records ----------------------------------------------------------------

    def _pull_loop(self) -> None:
        while not self.stopping.wait(self.config.pull_every_s):
            self._pull_all()

    def _pull_all(self) -> None:
        for node in self._alive():
            self._pull(node)

    def _pull(self, node: _Node, timeout_s: float | None = None) -> bool:
        """Copy what changed on ``node`` into the driver's database; True once caught up.
        A pull that timed out or failed is asked again from the same place next time."""
        from ray.exceptions import GetTimeoutError, RayError

        with node.pulling:
            while True:
                try:
                    batch = self.ray.get(
                        node.actor.changes.remote(node.cursor),
                        timeout=timeout_s or self.config.pull_timeout_s,
                    )
                except (GetTimeoutError, RayError):
                    return False
                self._store().copy_from_node(node.name, batch)
                node.cursor = node.cursor.after(batch)
                if not batch.full:
                    return True

    def _catch_up(self, window: int | None, patience_s: float) -> None:
        """Pull every live node until it has nothing more to send and, for ``window``,
        its share of it has ended. A slow node is waited for up to ``patience_s``; one
        that has not reported by then is said, its share stays open (the window fails),
        and its records still arrive by a later pull."""
        deadline = time.monotonic() + patience_s
        for node in self._alive():
            while True:
                left = deadline - time.monotonic()
                caught_up = left > 0 and self._pull(node, timeout_s=max(left, 1.0))
                ended = window is None or self._share(node.name, window) != "open"
                if caught_up and ended:
                    self._copy_evidence(node, max(deadline - time.monotonic(), 10.0))
                    break
                if time.monotonic() >= deadline:
                    self.say(
                        f"[bold red]node {node.name} did not report within {patience_s:.0f} s"
                        "[/]" + (f"; its share of window {window} is still open" if window else "")
                    )
                    break
                time.sleep(0.5)

    def _copy_evidence(self, node: _Node, timeout_s: float) -> None:
        """Copy the node's new evidence files into ``nodes/<node>/`` of the run folder."""
        from ray.exceptions import GetTimeoutError, RayError

        while True:
            try:
                batch = self.ray.get(node.actor.evidence.remote(node.evidence), timeout=timeout_s)
            except (GetTimeoutError, RayError) as exc:
                self.say(f"[red]node {node.name}: evidence not copied yet[/] ({first_line(exc)})")
                return
            keep_evidence(self._store().run_dir, node.name, batch)
            node.evidence = batch.seen
            if not batch.more:
                return

    def _share(self, node: str, window: int) -> str | None:
        return self._store().node_window_statuses(window).get(node)

    def _store(self) -> RunStore:
        if self.store is None:
            raise RuntimeError("the run database is not open")
        return self.store
