"""Warm verifier's containers on a real daemon, as Harbor's trials meet them: a Compose
service another harness started, verified trial after trial (`verify_compose_service`).
The first verification starts its own verifier's container and leaves a spare starting
after it; the next takes the spare and gives the outcome a fresh one gives, a forgery
included; a spare that died is not taken; closing leaves no container and no name."""

from __future__ import annotations

import io
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.integrations.container import verify_compose_service
from cleanroom.verifiers.container.run.spare_verifier import SpareVerifiers, spares_for
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.runtime.docker.images import SPARE_REPOSITORY
from cleanroom.verifiers.container.task import Task

from ..acted_containers import ORACLE, PLANTER, act_in

pytestmark = [pytest.mark.docker, pytest.mark.slow]

COMPOSE_PROJECT = "com.docker.compose.project"
COMPOSE_SERVICE = "com.docker.compose.service"


@pytest.fixture
def spares(runtime: DockerRuntime) -> Iterator[SpareVerifiers]:
    """This runtime's registry of spares, closed after the test."""
    registry = spares_for(runtime.docker.host, runtime.labels, lambda: runtime)
    yield registry
    registry.close()


def trial(runtime: DockerRuntime, task: Task, script: str) -> Outcome:
    """One trial: the task's image started as a Compose service of a project of its own,
    ``script`` run in it as the agent, then verified sealed as Harbor's plugin does."""
    image, _ = runtime.images.for_task(task)
    project = f"spare-{uuid.uuid4().hex[:10]}"
    ctr = runtime.docker.client.containers.run(
        image,
        ["sleep", "infinity"],
        detach=True,
        labels={**runtime.labels, COMPOSE_PROJECT: project, COMPOSE_SERVICE: "main"},
        network_mode="none",
    )
    try:
        act_in(runtime, task, str(ctr.id), script)
        return verify_compose_service(
            task, project, "main", connect=lambda: DockerRuntime.connect(runtime.labels)
        )
    finally:
        runtime.containers.remove(str(ctr.id))


def spare_up(runtime: DockerRuntime, within_s: float = 60.0) -> list[str]:
    """The idle verifier's containers of this runtime's labels, once one runs."""
    wanted = [f"{k}={v}" for k, v in runtime.labels.items()] + ["cleanroom.role=verifier"]
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        listed = runtime.docker.client.containers.list(
            filters={"label": wanted, "status": "running"}
        )
        running = [str(c.id) for c in listed]
        if running:
            return running
        time.sleep(0.2)
    return []


def test_a_verification_takes_a_spare_and_scores_as_a_fresh_one(
    runtime: DockerRuntime, spares: SpareVerifiers, example: Callable[[str], Task]
) -> None:
    task = example("fix-median")
    first = trial(runtime, task, ORACLE)
    assert (first.status, first.details.get("verifier_container")) == (Status.SUCCESS, None)
    assert spare_up(runtime), "no spare started after the first verification"

    second = trial(runtime, task, ORACLE)
    assert second.status is Status.SUCCESS, second.details
    assert second.details["verifier_container"] == "spare"
    assert second.details["timings"]["start_s"] < 0.5

    assert spare_up(runtime)
    forged = trial(runtime, task, PLANTER)
    assert forged.details["verifier_container"] == "spare"
    assert (forged.status, forged.reason) == (Status.FAILURE, Reason.TAMPER), forged.details


def test_a_spare_that_died_is_not_taken_and_closing_leaves_nothing(
    runtime: DockerRuntime, spares: SpareVerifiers, example: Callable[[str], Task]
) -> None:
    task = example("fix-median")
    trial(runtime, task, ORACLE)
    [spare] = spare_up(runtime)
    runtime.docker.client.containers.get(spare).kill()

    after = trial(runtime, task, ORACLE)
    assert after.status is Status.SUCCESS, after.details
    assert after.details.get("verifier_container") is None
    assert spare_up(runtime)  # the next one, started after this verification

    spares.close()
    assert spare_up(runtime, within_s=0.5) == []
    named = runtime.docker.client.images.list(name=SPARE_REPOSITORY)
    assert named == [], named


def test_a_spare_of_an_image_compose_built_does_not_pass_for_the_projects_container(
    runtime: DockerRuntime, spares: SpareVerifiers, example: Callable[[str], Task]
) -> None:
    # Compose labels what it builds with its project and service, and a container takes
    # its image's labels: a spare of such an image, up while the project's next step is
    # verified, must not be found as the project's container.
    task = example("fix-median")
    image, _ = runtime.images.for_task(task)
    project = f"spare-{uuid.uuid4().hex[:10]}"
    compose = {COMPOSE_PROJECT: project, COMPOSE_SERVICE: "main"}
    built = io.BytesIO(f"FROM {image}\n".encode())
    labelled, _ = runtime.docker.client.images.build(
        fileobj=built, labels={**runtime.labels, **compose}, pull=False, rm=True
    )
    ctr = runtime.docker.client.containers.run(
        labelled.id, ["sleep", "infinity"], detach=True,
        labels={**runtime.labels, **compose}, network_mode="none",
    )  # fmt: skip
    try:
        act_in(runtime, task, str(ctr.id), ORACLE)
        connect = lambda: DockerRuntime.connect(runtime.labels)  # noqa: E731
        first = verify_compose_service(task, project, "main", connect=connect)
        assert spare_up(runtime)
        again = verify_compose_service(task, project, "main", connect=connect)
    finally:
        runtime.containers.remove(str(ctr.id))
    assert first.status is Status.SUCCESS, first.details
    assert (again.status, again.details.get("verifier_container")) == (Status.SUCCESS, "spare")
