"""The name files the harness made for the agent's container, and what the agent changed
of them; a container's made again from a probe started as it was."""

from __future__ import annotations

import pytest

from cleanroom.core.observed_file import FileKind, ObservedFile
from cleanroom.verifiers.container.decision.name_files import (
    HOSTNAME,
    HOSTS,
    RESOLV_CONF,
    NameFiles,
    NameFilesUnreadable,
    changes,
)
from cleanroom.verifiers.container.runtime.docker.name_files import (
    made_again,
    probe_options,
    retargeted,
)
from cleanroom.verifiers.container.runtime.records import RuntimeUnavailable

MADE = NameFiles(b"127.0.0.1\tlocalhost\n", b"nameserver 10.0.0.53\n", b"abc123\n")


def regular(path: str, data: bytes) -> ObservedFile:
    return ObservedFile(path, FileKind.REGULAR, data, len(data))


def as_left(**edited: ObservedFile) -> dict[str, ObservedFile]:
    now = {p: regular(p, d) for p, d in MADE.by_path().items()}
    now.update({found.path: found for found in edited.values()})
    return now


def test_untouched_name_files_are_no_change() -> None:
    assert changes(MADE, as_left()) == ()


def test_a_line_added_to_the_hosts_file_is_listed_with_the_line() -> None:
    edited = b"127.0.0.9\tlocalhost\n" + MADE.hosts

    found = changes(MADE, as_left(hosts=regular(HOSTS, edited)))

    assert len(found) == 1
    assert found[0].path == HOSTS
    assert found[0].added == ("127.0.0.9\tlocalhost",)
    assert "127.0.0.9" in str(found[0])


def test_a_name_file_replaced_by_a_link_is_listed_as_one() -> None:
    link = ObservedFile(RESOLV_CONF, FileKind.SYMLINK, note="-> /tmp/x")

    found = changes(MADE, as_left(resolv=link))

    assert [(c.path, c.found) for c in found] == [(RESOLV_CONF, "symlink")]
    assert str(found[0]) == "/etc/resolv.conf is now symlink"


def test_a_line_removed_is_a_change_with_nothing_added() -> None:
    found = changes(MADE, as_left(hostname=regular(HOSTNAME, b"")))

    assert [(c.path, c.added) for c in found] == [(HOSTNAME, ())]


def test_name_files_taken_from_a_fresh_container_must_be_regular_files() -> None:
    observed = {p: regular(p, d) for p, d in MADE.by_path().items()}
    assert NameFiles.of(observed) == MADE

    observed[HOSTS] = ObservedFile.missing(HOSTS)
    with pytest.raises(NameFilesUnreadable, match="/etc/hosts"):
        NameFiles.of(observed)


def test_a_probe_starts_as_the_container_did() -> None:
    attrs = {
        "Config": {"Hostname": "abc123", "Domainname": "example.org"},
        "HostConfig": {"ExtraHosts": ["given:10.1.2.3"], "NetworkMode": "tasknet"},
        "NetworkSettings": {"Networks": {"tasknet": {}}},
    }

    assert probe_options(attrs) == {
        "hostname": "abc123",
        "domainname": "example.org",
        "network_mode": "tasknet",
        "extra_hosts": ["given:10.1.2.3"],
    }


def test_a_probe_joins_the_network_podman_calls_bridge_by_its_name() -> None:
    attrs = {
        "Config": {"Hostname": "h"},
        "HostConfig": {"NetworkMode": "bridge"},
        "NetworkSettings": {"Networks": {"tasknet": {"IPAddress": "10.89.0.2"}}},
    }

    assert probe_options(attrs)["network_mode"] == "tasknet"


def test_a_probe_of_a_container_in_anothers_namespace_gets_no_network() -> None:
    attrs = {"Config": {"Hostname": "h"}, "HostConfig": {"NetworkMode": "container:x"}}

    assert probe_options(attrs)["network_mode"] == "none"


def test_the_probes_address_and_name_are_put_back_to_the_containers() -> None:
    probe = {
        "Name": "/probe_name",
        "NetworkSettings": {"Networks": {"tasknet": {"IPAddress": "172.19.0.9"}}},
    }
    container = {
        "Name": "/harbor_main",
        "NetworkSettings": {"Networks": {"tasknet": {"IPAddress": "172.19.0.2"}}},
    }
    hosts = b"127.0.0.1\tlocalhost\n# a comment\n10.1.2.3\tgiven\n172.19.0.9\tabc123 probe_name\n"

    made = retargeted(hosts, probe, container)

    assert made == (
        b"127.0.0.1\tlocalhost\n# a comment\n10.1.2.3\tgiven\n172.19.0.2\tabc123 harbor_main\n"
    )


def test_made_again_keeps_the_probes_resolver_and_hostname_files() -> None:
    container = {"Config": {"Hostname": "abc123"}}
    probe_files = NameFiles(b"127.0.0.1\tlocalhost\n", b"nameserver 1.1.1.1\n", b"abc123")

    assert made_again(container, {}, probe_files) == probe_files

    with pytest.raises(RuntimeUnavailable, match="hostname"):
        made_again({"Config": {}}, {}, probe_files)
