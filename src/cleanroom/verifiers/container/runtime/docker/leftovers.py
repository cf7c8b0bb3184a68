"""What verifications left on a daemon when their process ended without removing it (a
``kill -9``, a machine that lost power): found by cleanroom's labels, never anything else.

Every container and network a `DockerRuntime` makes carries ``cleanroom.verify=1`` and
its process as ``cleanroom.owner`` (`lifecycle.owner_token`). `collect` removes those
whose owner has ended: containers first, then networks. Those whose owner still runs,
that another machine's process made (its boot is not this one's), or that carry no owner
are listed and left.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cleanroom.docker_layer import ContainerInfo, Docker
from cleanroom.lifecycle import owner_gone
from cleanroom.verifiers.container.runtime.docker import LABEL, OWNER_LABEL
from cleanroom.verifiers.container.runtime.records import RuntimeUnavailable


@dataclass
class Collected:
    """What `collect` removed (or, in a dry run, would remove), and what it left, why."""

    removed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"removed": self.removed, "left": self.left, "problems": self.problems}


def collect(docker: Docker, *, dry_run: bool = False) -> Collected:
    """Remove every container, then every network, of cleanroom's verifications whose
    owner process has ended; with ``dry_run``, only say so."""
    out = Collected()
    kinds: list[tuple[str, list[ContainerInfo], Callable[[str], None]]] = [
        ("container", docker.containers_labelled(f"{LABEL}=1"), _remover(docker, "container")),
        ("network", docker.networks_found(f"{LABEL}=1"), _remover(docker, "network")),
    ]
    for kind, found, remove in kinds:
        for item in found:
            what = f"{kind} {item.name or item.id[:12]}"
            owner = item.labels.get(OWNER_LABEL, "")
            gone = owner_gone(owner) if owner else None
            if gone is None:
                why = "it carries no owner" if not owner else "its owner is not of this machine"
                out.left.append(f"{what}: {why}")
            elif not gone:
                out.left.append(f"{what}: its owner, pid {owner.split(':')[1]}, still runs")
            elif dry_run:
                out.removed.append(f"{what} (its owner has ended; not removed: a dry run)")
            else:
                try:
                    remove(item.id)
                    out.removed.append(what)
                except RuntimeUnavailable as exc:
                    out.problems.append(f"{what}: {exc}")
    return out


def _remover(docker: Docker, kind: str) -> Callable[[str], None]:
    if kind == "container":
        return lambda ident: docker.remove_container(ident, volumes=True)
    return docker.remove_network
