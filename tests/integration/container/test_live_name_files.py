"""A live verifier (``live_processes``) joins the agent's network namespace with the
harness's own /etc/hosts, /etc/resolv.conf and /etc/hostname, taken before the agent
acted: a line the agent adds to its hosts file fools ``shared`` and is the agent's 0 under
``sealed``, and what it changed is evidence."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import cleanroom
from cleanroom.core.outcomes import Status
from cleanroom.redteam.catalogue import by_id
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task

from ..acted_containers import ORACLE, act_in, start_container

pytestmark = pytest.mark.docker

ATTACK = by_id("hosts-redirect")


def attacked(task: Task, runtime: DockerRuntime, mode: Mode) -> tuple[Status, float | None, dict]:
    outcome = verify_task(
        task, AgentSpec.script(ATTACK.script, ATTACK.id), runtime, VerifyOptions(mode=mode)
    )
    return outcome.status, outcome.score, outcome.details


def test_the_hosts_redirect_fools_shared(
    example: Callable[[str], Task], runtime: DockerRuntime
) -> None:
    status, score, details = attacked(example("http-sum"), runtime, Mode.SHARED)

    assert (status, score) == (Status.SUCCESS, 1.0), details


def test_the_hosts_redirect_is_held_by_sealed_and_listed_as_evidence(
    example: Callable[[str], Task], runtime: DockerRuntime
) -> None:
    status, score, details = attacked(example("http-sum"), runtime, Mode.SEALED)

    assert (status, score) == (Status.FAILURE, 0.0), details
    changed = details["name_files_changed"]
    assert any("/etc/hosts" in c and "127.0.0.9" in c for c in changed), changed


@pytest.mark.parametrize("mode", list(Mode))
def test_the_honest_server_scores_one_and_changes_no_name_file(
    example: Callable[[str], Task], runtime: DockerRuntime, mode: Mode
) -> None:
    outcome = verify_task(example("http-sum"), AgentSpec.solution(), runtime, VerifyOptions(mode))

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0), outcome
    assert "name_files_changed" not in outcome.details


@pytest.mark.parametrize("engine", ["runtime", "podman"])
def test_a_verifier_joining_another_harness_container_gets_name_files_made_again(
    request: pytest.FixtureRequest, engine: str
) -> None:
    # Given a container another harness started (on Docker or podman), on a network of
    # its own, whose hosts file its agent edited
    runtime: DockerRuntime = request.getfixturevalue(engine)
    network = runtime.networks.create("name-files")
    ctr = runtime.docker.run_container(
        "cleanroom/base:bookworm",
        ["sleep", "infinity"],
        network=network,
        extra_hosts={"given": "10.1.2.3"},
        labels=runtime.labels,
    )
    try:
        edited = runtime.containers.exec(
            ctr, ["sh", "-c", "echo '10.9.9.9 store' >> /etc/hosts"], user="0"
        )
        assert edited.exit_code == 0

        # When the runtime makes its name files again
        made = runtime.containers.name_files(ctr)

        # Then they are what the daemon made, without the agent's line
        hostname = runtime.docker.inspect_container(ctr)["Config"]["Hostname"]
        assert made.hostname.strip() == hostname.encode()
        assert runtime.files.read(ctr, "/etc/hostname", 1 << 16).data == made.hostname
        assert b"store" not in made.hosts
        assert b"10.1.2.3\tgiven\n" in made.hosts
        now = runtime.files.read(ctr, "/etc/hosts", 1 << 16).data
        assert now.replace(b"10.9.9.9 store\n", b"") == made.hosts
        assert runtime.files.read(ctr, "/etc/resolv.conf", 1 << 16).data == made.resolv_conf
    finally:
        runtime.containers.remove(ctr)
        runtime.networks.remove(network)


@pytest.mark.parametrize("engine", ["runtime", "podman"])
@pytest.mark.parametrize(("script", "score"), [(ORACLE, 1.0), (ATTACK.script, 0.0)])
def test_a_container_another_harness_started_is_verified_with_name_files_made_again(
    example: Callable[[str], Task],
    request: pytest.FixtureRequest,
    engine: str,
    script: str,
    score: float,
) -> None:
    # Given http-sum's container, started as another harness would (on Docker or
    # podman), the agent acted in
    runtime: DockerRuntime = request.getfixturevalue(engine)
    task = example("http-sum")
    ident, name = start_container(runtime, task)
    try:
        act_in(runtime, task, ident, script)

        # When cleanroom verifies it by name, sealed
        on = "podman" if engine == "podman" else "docker"
        outcome = cleanroom.verify_container(task.root, name, engine=on)

        # Then the honest server scores 1 and the hosts redirect 0
        expected = Status.SUCCESS if score else Status.FAILURE
        assert (outcome.status, outcome.score) == (expected, score), outcome
        changed = outcome.details.get("name_files_changed", [])
        if script == ORACLE:  # the files made again are Docker's, to the byte
            assert changed == []
        else:
            assert any("127.0.0.9" in c for c in changed), changed
    finally:
        runtime.containers.remove(ident)
