"""A Ray cluster of nodes on this machine, on 127.0.0.1: for trying ``--ray`` locally,
for the tests and for the benchmarks.

Each node is a ``ray start`` in a session of its own, with its own temp dir, ports and
resources (``docker`` slots, ``desktops``); a node's processes (its raylet, its workers,
which Ray puts each in a process group of its own, and the rest) all stay in that
session, so `kill_node` can take one node away whole, as if its machine were lost, and
`stop` takes every node of this cluster away the same way (never another cluster's).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cleanroom.ray_cluster.session import DOCKER_RESOURCE

# Ports each node needs that would collide between two nodes on one machine.
_NODE_PORT_FLAGS = (
    "--node-manager-port",
    "--object-manager-port",
    "--metrics-export-port",
    "--dashboard-agent-listen-port",
    "--dashboard-agent-grpc-port",
    "--runtime-env-agent-port",
)


class ClusterError(RuntimeError):
    """A node could not be started; the message holds ``ray start``'s output."""


@dataclass
class LocalNode:
    session: int  # the session id of its `ray start`: every process of the node
    temp_dir: Path
    labels: str  # CLEANROOM_LABELS of its workers: what its containers carry


@dataclass
class LocalCluster:
    """Nodes on 127.0.0.1; the first is the head. Start with `start`, end with `stop`."""

    address: str = ""
    nodes: list[LocalNode] = field(default_factory=list)
    ray: Path = field(default_factory=lambda: Path(sys.executable).with_name("ray"))

    @classmethod
    def start(
        cls,
        node_labels: list[str],
        docker_slots: int = 1,
        python_path: str = "",
        resources: list[dict[str, float]] | None = None,
        env: dict[str, str] | None = None,
    ) -> LocalCluster:
        """A head and one more node per entry after the first of ``node_labels`` (each
        entry the ``CLEANROOM_LABELS`` of that node's containers). Each node declares
        ``docker_slots``, or the entry of ``resources`` at its place; ``python_path``
        goes first on the workers' ``PYTHONPATH``; ``env`` is added to their environment."""
        cluster = cls()
        try:
            (head_port,) = _free_ports(1)
            cluster.address = f"127.0.0.1:{head_port}"
            for n, labels in enumerate(node_labels):
                role = ["--head", f"--port={head_port}", "--include-dashboard=false"]
                joined = role if n == 0 else [f"--address={cluster.address}"]
                declared = resources[n] if resources else {DOCKER_RESOURCE: float(docker_slots)}
                cluster._start_node(joined, labels, declared, python_path, env or {})
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _start_node(
        self,
        args: list[str],
        labels: str,
        resources: dict[str, float],
        python_path: str,
        extra_env: dict[str, str],
    ) -> None:
        # A short temp dir: Ray's socket paths must fit in a Unix socket name.
        temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
        env = {**os.environ, **extra_env, "CLEANROOM_LABELS": labels}
        if python_path:
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (python_path, env.get("PYTHONPATH")) if p
            )
        ports = [f"{f}={p}" for f, p in zip(_NODE_PORT_FLAGS, _free_ports(6), strict=True)]
        argv = [
            str(self.ray),
            "start",
            "--node-ip-address=127.0.0.1",
            f"--temp-dir={temp}",
            "--num-cpus=1",
            f"--resources={json.dumps(resources)}",
            "--disable-usage-stats",
            *ports,
            *args,
        ]
        proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.nodes.append(LocalNode(proc.pid, temp, labels))
        out, _ = proc.communicate(timeout=180)
        if proc.returncode != 0:
            raise ClusterError(f"ray start exited {proc.returncode}: {out.decode()[-2000:]}")

    def node_ids(self) -> list[str]:
        """Each node's Ray node id, in the order of `nodes` (asked of the cluster by a
        driver process of its own, matched by each node's temp dir)."""
        script = (
            f"import json, ray; ray.init(address={self.address!r}, logging_level='ERROR');"
            "print(json.dumps({n['NodeID']: n['ObjectStoreSocketName'] for n in ray.nodes()"
            " if n['Alive']}))"
        )
        python = self.ray.with_name("python")
        out = subprocess.run(
            [str(python), "-c", script], capture_output=True, text=True, timeout=120, check=True
        ).stdout
        sockets: dict[str, str] = json.loads(out.strip().splitlines()[-1])
        ids = []
        for node in self.nodes:
            found = [i for i, sock in sockets.items() if sock.startswith(f"{node.temp_dir}/")]
            if len(found) != 1:
                raise ClusterError(f"no single live node has its temp dir in {node.temp_dir}")
            ids.append(found[0])
        return ids

    def kill_node(self, index: int) -> None:
        """SIGKILL every process of node ``index``, as if its machine went away."""
        sid = self.nodes[index].session
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError, ValueError):
                # After the command name: state, ppid, process group, then the session.
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[3]) == sid:
                    os.kill(int(entry.name), signal.SIGKILL)

    def stop(self) -> None:
        """Stop every node of this cluster, and only those (another cluster of this
        machine keeps running), and remove their temp dirs."""
        for index in range(len(self.nodes)):
            self.kill_node(index)
        for node in self.nodes:
            shutil.rmtree(node.temp_dir, ignore_errors=True)


def _free_ports(n: int) -> list[int]:
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
