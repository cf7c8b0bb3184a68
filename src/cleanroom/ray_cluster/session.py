"""Joining a Ray cluster, and the nodes in it that declare a resource.

Ray is an extra (``cleanroom[ray]``): `import_ray` names the extra when it is missing.
`joined` refuses at once an address where nothing listens (Ray itself retries such an
address for minutes), and sends what Ray's driver prints about its cluster (a node that
died) to stderr, never to the caller's stdout, which may be JSON.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from cleanroom.core.errors import CleanroomError, ExtraNotInstalledError

# Units of this resource on a node: how many container jobs (audits, verifications) it
# runs at once with its own Docker daemon.
DOCKER_RESOURCE = "docker"
# Units of this resource on a node: how many acting desktop environments its pool has.
DESKTOPS_RESOURCE = "desktops"


class RayUnavailable(CleanroomError, RuntimeError):
    """No Ray cluster could be joined at the address given, or it has no node for the work."""


@dataclass(frozen=True)
class RayNode:
    """A live node of the cluster, as Ray reports it."""

    node_id: str
    host: str
    ip: str
    resources: dict[str, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """How records name the node: its host and the start of its Ray node id."""
        return f"{self.host}/{self.node_id[:12]}"

    def units(self, resource: str) -> int:
        return int(self.resources.get(resource, 0))


def import_ray(feature: str) -> ModuleType:
    """Ray, or `ExtraNotInstalledError` naming ``cleanroom[ray]`` for ``feature``."""
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise ExtraNotInstalledError(feature, "ray", exc.name or "ray") from exc


@contextlib.contextmanager
def joined(address: str, feature: str) -> Iterator[ModuleType]:
    """Join the cluster at ``address`` (``auto``: the one this machine is in) for the
    block; yields the ``ray`` module. Raises `RayUnavailable` when it cannot be joined."""
    ray = import_ray(feature)
    reachable(address)
    with contextlib.redirect_stdout(sys.stderr):
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError
            raise RayUnavailable(f"no Ray cluster at {address}: {exc}") from exc
        try:
            yield ray
        finally:
            ray.shutdown()


def reachable(address: str, timeout_s: float = 10.0) -> None:
    """Refuse at once a ``host:port`` where nothing listens."""
    host, sep, port = address.rpartition(":")
    if address == "auto" or not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RayUnavailable(f"no Ray cluster at {address}: {exc}") from exc


def nodes_declaring(ray: Any, resource: str) -> list[RayNode]:
    """The live nodes with at least one unit of ``resource``, in a stable order."""
    found = []
    for node in ray.nodes():
        units = node.get("Resources", {})
        if node.get("Alive") and units.get(resource, 0) >= 1:
            found.append(
                RayNode(
                    node["NodeID"],
                    str(node.get("NodeManagerHostname", "")),
                    str(node.get("NodeManagerAddress", "")),
                    {str(k): float(v) for k, v in units.items()},
                )
            )
    return sorted(found, key=lambda n: n.node_id)


def require_nodes(ray: Any, address: str, resource: str) -> list[RayNode]:
    """`nodes_declaring`, or `RayUnavailable` saying how a node declares ``resource``."""
    nodes = nodes_declaring(ray, resource)
    if not nodes:
        raise RayUnavailable(
            f"the Ray cluster at {address} has no node declaring the {resource!r} resource "
            f"(ray start --resources '{{\"{resource}\": N}}')"
        )
    return nodes


def this_node_name(ray: Any) -> str:
    """Inside a Ray task or actor: the name records give the node it runs on."""
    return f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:12]}"


def first_line(exc: BaseException) -> str:
    """An exception in one line, for records."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]
