"""The name files the harness made for the agent's container, and what the agent changed
of them; Docker's hosts file made again from a container's inspect."""

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
    LOCALHOST_BLOCK,
    hosts_file,
    probe_network_mode,
)

MADE = NameFiles(LOCALHOST_BLOCK.encode(), b"nameserver 10.0.0.53\n", b"abc123\n")


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


def test_the_hosts_file_is_made_as_docker_writes_it() -> None:
    attrs = {
        "HostConfig": {"ExtraHosts": ["given:10.1.2.3"], "NetworkMode": "tasknet"},
        "NetworkSettings": {"Networks": {"tasknet": {"IPAddress": "172.19.0.2"}}},
    }

    made = hosts_file("abc123", "", attrs)

    assert made == LOCALHOST_BLOCK + "10.1.2.3\tgiven\n172.19.0.2\tabc123\n"
    assert hosts_file("abc", "example.org", attrs).endswith("\tabc.example.org abc\n")


@pytest.mark.parametrize(
    ("mode", "probe"),
    [("tasknet", "tasknet"), ("bridge", "none"), ("default", "none"), ("container:x", "none")],
)
def test_the_resolver_probe_joins_only_a_network_of_the_users(mode: str, probe: str) -> None:
    assert probe_network_mode({"HostConfig": {"NetworkMode": mode}}) == probe
