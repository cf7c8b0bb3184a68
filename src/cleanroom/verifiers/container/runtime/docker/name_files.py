"""The name files (``/etc/hosts``, ``/etc/resolv.conf``, ``/etc/hostname``) the daemon
made for a container another harness started, made again without reading them from it.

The daemon binds its own copies of them into a container, and the agent may have edited
them since; a verifier joining that container's network namespace must not read those.
So a *probe*, a fresh idle container of the same image, is started the way the
container was: its hostname, domain, extra hosts and network. The daemon writes the
probe's files as it wrote the container's (Docker's localhost block, podman's entries of
the host's own hosts file, and so on), and the probe's own address and name in its hosts
file are put back to the container's (`retargeted`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cleanroom.verifiers.container.decision.name_files import NameFiles
from cleanroom.verifiers.container.runtime.records import RuntimeUnavailable


def probe_options(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """``containers.run`` options that start a probe as the container of this inspect
    was started, for what its name files hold: hostname, domain, extra hosts, network (a
    container that joined another's namespace has files of that one's: the probe gets
    none)."""
    config = attrs.get("Config") or {}
    host_config = attrs.get("HostConfig") or {}
    options: dict[str, Any] = {
        "hostname": str(config.get("Hostname") or ""),
        "network_mode": _probe_network(str(host_config.get("NetworkMode") or "none"), attrs),
    }
    if config.get("Domainname"):
        options["domainname"] = str(config["Domainname"])
    if host_config.get("ExtraHosts"):
        options["extra_hosts"] = list(host_config["ExtraHosts"])
    return options


def retargeted(probe_hosts: bytes, probe: Mapping[str, Any], container: Mapping[str, Any]) -> bytes:
    """The probe's hosts file with the probe's own addresses and name (podman writes the
    container's name) put back to the container's, network by network."""
    swap: dict[str, str] = {}
    probe_networks = _networks(probe)
    for name, own in _networks(container).items():
        theirs = probe_networks.get(name, {})
        for key in ("IPAddress", "GlobalIPv6Address"):
            if theirs.get(key) and own.get(key):
                swap[str(theirs[key])] = str(own[key])
    probe_name, own_name = _name(probe), _name(container)
    if probe_name and own_name:
        swap[probe_name] = own_name
    lines = []
    for line in probe_hosts.decode("utf-8", "replace").splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            lines.append(line)
            continue
        address, *names = (swap.get(f, f) for f in fields)
        lines.append(f"{address}\t{' '.join(names)}")
    return ("\n".join(lines) + "\n").encode()


def made_again(
    container: Mapping[str, Any], probe: Mapping[str, Any], probe_files: NameFiles
) -> NameFiles:
    """The name files of the container of inspect ``container`` from its probe's: the
    probe's resolver and hostname files (it has the container's hostname), and its hosts
    file `retargeted`."""
    if not (container.get("Config") or {}).get("Hostname"):
        raise RuntimeUnavailable("the container's inspect names no hostname")
    hosts = retargeted(probe_files.hosts, probe, container)
    return NameFiles(hosts, probe_files.resolv_conf, probe_files.hostname)


def _probe_network(mode: str, attrs: Mapping[str, Any]) -> str:
    """The network the probe starts on: the container's own mode where it has none of a
    network's (none, host), none where it joined another container's namespace, else
    the network it is on (podman's inspect says ``bridge`` for a named network: its
    networks say which)."""
    if mode in ("none", "host"):
        return mode
    if mode.startswith("container:"):
        return "none"
    names = list(_networks(attrs))
    return mode if mode in names or not names else names[0]


def _networks(attrs: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    found = (attrs.get("NetworkSettings") or {}).get("Networks") or {}
    return {str(k): dict(v or {}) for k, v in found.items()}


def _name(attrs: Mapping[str, Any]) -> str:
    return str(attrs.get("Name") or "").lstrip("/")
