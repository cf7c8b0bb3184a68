"""Containers an agent already acted in, started as another harness would start them: the
task's image as a plain container, the task's solution copied in, and a script run in it
as the agent (the oracle, or the planter that forges a reward)."""

from __future__ import annotations

import io
import tarfile

from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task

ORACLE = "bash /solution/solve.sh"
# Plants a reward of 1 and leaves a process rewriting it every 50 ms: a verifier that
# removes the reward before its tests and reads it after them still reads 1.
PLANTER = (
    "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && "
    "(setsid sh -c 'while :; do printf 1 1<> /logs/verifier/reward.txt; sleep 0.05; done' "
    ">/dev/null 2>&1 < /dev/null &) ; sleep 0.2"
)


def start_container(runtime: DockerRuntime, task: Task, name: str | None = None) -> tuple[str, str]:
    """The task's image started idle, with no network, labelled for the test's cleanup
    (named ``name``, or by the daemon): its ID and name."""
    image, _ = runtime.images.for_task(task)
    ctr = runtime.docker.client.containers.run(
        image,
        ["sleep", "infinity"],
        detach=True,
        labels=runtime.labels,
        network_mode="none",
        name=name,
    )
    return str(ctr.id), str(ctr.name)


def act_in(runtime: DockerRuntime, task: Task, container: str, script: str) -> None:
    """Copy the task's solution to /solution and run ``script`` in ``container`` as the
    agent; it must succeed."""
    ctr = runtime.docker.client.containers.get(container)
    solution = io.BytesIO()
    with tarfile.open(fileobj=solution, mode="w") as tar:
        tar.add(task.root / "solution", arcname="solution")
    ctr.put_archive("/", solution.getvalue())
    done = ctr.exec_run(["bash", "-c", script])
    assert done.exit_code == 0, done.output
