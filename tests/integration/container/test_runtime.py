"""The Docker adapter: the host-side diff agrees with the daemon's, images are cached."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from cleanroom.verifiers.container.decision.tamper import Change, ChangeKind
from cleanroom.verifiers.container.runtime import AgentContainerSpec, Limits
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task

pytestmark = pytest.mark.docker

CHANGES = (
    "mkdir -p /srv/new && echo x > /srv/new/file && echo y >> /etc/hostname.bak"
    " && rm /usr/bin/pytest && echo z > /usr/local/bin/tool && chmod 0700 /opt"
)


def test_the_host_side_diff_agrees_with_docker_diff(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    image, _ = runtime.images.for_task(example("fix-median"))
    ctr = runtime.containers.start_agent(AgentContainerSpec(image, Limits(), None, "diff-check"))
    try:
        assert runtime.containers.exec(ctr, ["sh", "-c", CHANGES], user="0").exit_code == 0
        runtime.containers.freeze(ctr)

        diff = runtime.state.changes(ctr)
        api = [
            Change(d["Path"], ChangeKind.from_docker(d["Kind"]))
            for d in runtime.docker.api.diff(ctr)
        ]
    finally:
        runtime.containers.remove(ctr)

    assert diff.source == "overlay"
    assert set(diff.changes) == set(api)
    assert Change("/usr/bin/pytest", ChangeKind.DELETED) in diff.changes


def test_an_unchanged_environment_reuses_its_image(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    task = example("csv-report")
    first, _ = runtime.images.for_task(task)

    second, built = runtime.images.for_task(task)

    assert (second, built) == (first, False)


def test_task_containers_have_no_network_and_the_tasks_limits(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    task = example("fix-median")
    image, _ = runtime.images.for_task(task)
    ctr = runtime.containers.start_agent(
        AgentContainerSpec(image, Limits.of(task), None, "limits-check")
    )
    try:
        host = runtime.docker.api.inspect_container(ctr)["HostConfig"]
        links = runtime.containers.exec(ctr, ["cat", "/proc/net/dev"]).stdout.decode()
    finally:
        runtime.containers.remove(ctr)

    assert host["NetworkMode"] == "none"
    assert (host["Memory"], host["NanoCpus"], host["PidsLimit"]) == (512 << 20, 10**9, 256)
    assert "eth0" not in links


# 20 MiB into the daemon's log of its own container, through its first process's output.
FLOOD_OWN_LOG = "head -c 20971520 /dev/zero | tr '\\0' x > /proc/1/fd/1"


@pytest.mark.parametrize("host", ["docker", "podman"])
def test_an_agent_writing_to_its_containers_log_stops_at_the_bound_on_the_host(
    runtime: DockerRuntime,
    podman: DockerRuntime,
    example: Callable[[str], Task],
    host: str,
) -> None:
    rt = runtime if host == "docker" else podman
    image, _ = rt.images.for_task(example("fix-median"))
    ctr = rt.containers.start_agent(AgentContainerSpec(image, Limits(), None, "log-flood"))
    try:
        done = rt.containers.exec(ctr, ["sh", "-c", FLOOD_OWN_LOG], user="0")
        assert done.exit_code == 0, done.output[-300:]
        attrs = rt.docker.inspect_container(ctr)
        log_path = attrs.get("LogPath") or ""
        assert log_path, attrs.get("HostConfig", {}).get("LogConfig")
        size = os.stat(log_path).st_size
    finally:
        rt.containers.remove(ctr)
    # The bound (8 MiB) and the log's own framing of each line; never the 20 MiB written.
    assert size <= 9 << 20, size
