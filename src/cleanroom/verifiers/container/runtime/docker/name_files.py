"""The name files (``/etc/hosts``, ``/etc/resolv.conf``, ``/etc/hostname``) Docker made
for a container another harness started, made again from what its inside cannot change.

Docker binds its own copies of them into a container, and the agent may have edited
them since; a verifier joining that container's network namespace must not read those.
``/etc/hostname`` and ``/etc/hosts`` are written here from the container's inspect as
Docker writes them (its fixed localhost block, the ``extra_hosts``, then each address of
the container under its hostname). ``/etc/resolv.conf`` depends on the daemon's host and
the network only, so it is taken from a fresh container of the same image on the same
network (`probe_network_mode`; `DockerContainers.name_files` starts it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cleanroom.core.observed_file import FileKind, ObservedFile
from cleanroom.verifiers.container.decision.name_files import NameFiles
from cleanroom.verifiers.container.runtime.records import RuntimeUnavailable

# What Docker writes first in every container's hosts file.
LOCALHOST_BLOCK = (
    "127.0.0.1\tlocalhost\n"
    "::1\tlocalhost ip6-localhost ip6-loopback\n"
    "fe00::0\tip6-localnet\n"
    "ff00::0\tip6-mcastprefix\n"
    "ff02::1\tip6-allnodes\n"
    "ff02::2\tip6-allrouters\n"
)
# Network modes with no network of the user's: the host's resolver is copied in.
_HOST_RESOLVER_MODES = ("default", "bridge", "none", "host", "")


def probe_network_mode(attrs: Mapping[str, Any]) -> str:
    """The network a fresh container needs to get the resolver file Docker gave the
    container of this inspect: its user-defined network, else none."""
    mode = str((attrs.get("HostConfig") or {}).get("NetworkMode") or "")
    if mode in _HOST_RESOLVER_MODES or mode.startswith("container:"):
        return "none"
    return mode


def from_inspect(attrs: Mapping[str, Any], resolv_conf: ObservedFile) -> NameFiles:
    """The name files of the container of this inspect, its resolver file as a fresh
    container on its network has it."""
    config = attrs.get("Config") or {}
    hostname = str(config.get("Hostname") or "")
    if not hostname:
        raise RuntimeUnavailable("the container's inspect names no hostname")
    if resolv_conf.kind is not FileKind.REGULAR:
        raise RuntimeUnavailable(f"a fresh container's resolver file is {resolv_conf.kind.value}")
    domain = str(config.get("Domainname") or "")
    hosts = hosts_file(hostname, domain, attrs)
    return NameFiles(hosts.encode(), resolv_conf.data, f"{hostname}\n".encode())


def hosts_file(hostname: str, domain: str, attrs: Mapping[str, Any]) -> str:
    """The hosts file Docker writes for a container of this inspect: its localhost
    block, each ``extra_hosts`` entry, then each of its addresses under its name."""
    lines = [LOCALHOST_BLOCK]
    for entry in (attrs.get("HostConfig") or {}).get("ExtraHosts") or []:
        name, _, address = str(entry).partition(":")
        if name and address:
            lines.append(f"{address}\t{name}\n")
    names = f"{hostname}.{domain} {hostname}" if domain else hostname
    networks = (attrs.get("NetworkSettings") or {}).get("Networks") or {}
    for network in networks.values():
        for key in ("IPAddress", "GlobalIPv6Address"):
            ip = (network or {}).get(key)
            if ip:
                lines.append(f"{ip}\t{names}\n")
    return "".join(lines)
