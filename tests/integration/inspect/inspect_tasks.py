"""Solvers and tasks of the inspect tests' own, run by inspect_ai in .venv-harbor's Python
(``inspect eval ... --solver inspect_tasks.py@planter``, with this folder on PYTHONPATH).
None of them needs a model.

`planter` does not do the task: it writes a reward of 1 and leaves a detached process
that rewrites it atomically every 50 ms (a temporary file renamed over it, so a reader
never catches it empty), which a scorer that runs the tests in the agent's container and
reads the reward after them cannot tell from the tests' own. `lose_container` does the
task and then removes the sample's container through the Docker daemon, from the host:
what a daemon that lost the container does to the verification, which no agent can do
from inside it.

Run as a program, it prints what the tests ask of inspect's own types:
``python inspect_tasks.py scores`` the scores `score_of` makes of each kind of outcome,
``python inspect_tasks.py tally LOG`` the tally of an eval log's outcomes (``tally-empty
LOG``: of the same log with its samples taken out), and
``python inspect_tasks.py conformance TASK`` which of inspect's own checks of a sandbox
provider fail on the cleanroom sandbox.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import sys
from typing import Any

import anyio
from inspect_ai import Task, task, task_with
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox
from inspect_ai.util._sandbox import self_check
from inspect_harbor import oracle

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.integrations.inspect_sandbox import start_task_container
from cleanroom.integrations.inspect_scorer import (
    harbor_sealed,
    score_of,
    sealed_harbor_scorer,
    tally_of,
)
from cleanroom.verifiers.container.runtime.docker import DockerRuntime

# The id of the sample whose container is lost before it is scored.
LOST = "fix-median-lost"

# The rewrite goes through a temporary file renamed over the reward, so a reader never
# catches the reward empty.
REWRITE = (
    "while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/.reward.tmp"
    " && mv -f /logs/verifier/.reward.tmp /logs/verifier/reward.txt; sleep 0.05; done"
)
PLANT = (
    "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n"
    f"setsid nohup sh -c '{REWRITE}' </dev/null >/dev/null 2>&1 &\n"
)


@solver
def planter() -> Solver:
    """Plant a reward of 1 and keep it there with a process left running."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        done = await sandbox().exec(["sh", "-c", PLANT], timeout=30)
        if not done.success:
            raise RuntimeError(f"planting failed: {done.stdout} {done.stderr}")
        return state

    return solve


@solver
def lose_container(sample_id: str) -> Solver:
    """Remove the container of sample ``sample_id`` from the host once its solver ran."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if state.sample_id == sample_id:
            container = (await sandbox().connection()).container
            await anyio.to_thread.run_sync(_remove, container)
        return state

    return solve


@solver
def nothing() -> Solver:
    """An agent that does nothing."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return state

    return solve


@solver
def probe_sandbox() -> Solver:
    """Ask the sandbox for each thing inspect's sandbox interface promises, and keep
    what came back (or the exception's name) in the sample's store, as ``probe``."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        box = sandbox()
        seen: dict[str, Any] = {}

        async def keep(name: str, call: Any) -> None:
            try:
                seen[name] = await call
            except TimeoutError:  # inspect re-raises it as its own subclass
                seen[name] = "TimeoutError"
            except Exception as exc:
                seen[name] = type(exc).__name__

        await keep("input", _stdout(box.exec(["cat"], input="from stdin")))
        await keep("input_left", _stdout(box.exec(["ls", "-a", "/tmp"])))
        await keep("env", _stdout(box.exec(["sh", "-c", "echo $PROBE"], env={"PROBE": "set"})))
        await keep("user", _stdout(box.exec(["id", "-un"], user="nobody")))
        await keep("networks", _stdout(box.exec(["ls", "/sys/class/net"])))
        await keep("timeout", box.exec(["sleep", "30"], timeout=1))
        await box.write_file("probe/nested/text.txt", "written\r\n")
        await keep("cwd", _stdout(box.exec(["pwd"], cwd="probe")))
        await keep("text", box.read_file("/app/probe/nested/text.txt"))
        await box.write_file("/tmp/new/bytes.bin", bytes(range(256)))
        await keep("bytes", _length(box.read_file("/tmp/new/bytes.bin", text=False)))
        await box.exec(["ln", "-s", "/tmp/new/bytes.bin", "/tmp/link"])
        await keep("link", _length(box.read_file("/tmp/link", text=False)))
        await keep("missing", box.read_file("/tmp/missing"))
        await keep("folder", box.read_file("/tmp/new"))
        await keep("write_folder", box.write_file("/tmp/new", "x"))
        big = "head -c 2097152 /dev/zero > /tmp/big"  # 2 MiB, over the 1 MiB limits
        await box.exec(["sh", "-c", big])
        await keep("big_read", box.read_file("/tmp/big", text=False))
        await keep("big_output", box.exec(["head", "-c", "2097152", "/dev/zero"]))
        state.store.set("probe", seen)
        return state

    return solve


async def _stdout(running: Any) -> str:
    done = await running
    return str(done.stdout).strip()


async def _length(reading: Any) -> int:
    return len(await reading)


@task
def the_cleanroom_sandbox_probed(path: str) -> Task:
    """The task in the cleanroom sandbox, with `probe_sandbox` for its agent."""
    return task_with(harbor_sealed(path=path, sandbox="cleanroom"), solver=probe_sandbox())


def _remove(container: str) -> None:
    runtime = DockerRuntime.connect()
    try:
        runtime.containers.remove(container)
    finally:
        runtime.docker.close()


@task
def fix_median_with_a_lost_container(path: str) -> Task:
    """Two samples of the task, both done by the oracle; the second one's container is
    gone when the sealed scorer looks for it."""
    loaded = harbor_sealed(path=path, sandbox="cleanroom")
    kept = loaded.dataset[0]
    lost = kept.model_copy(update={"id": LOST})
    return task_with(loaded, dataset=[kept, lost], solver=[oracle(), lose_container(LOST)])


@task
def a_sandbox_without_a_container(path: str) -> Task:
    """A sample of the task in inspect's local sandbox: there is no container to verify."""
    sample = Sample(input="nothing", id="local", sandbox="local", metadata={"task_dir": path})
    return Task(dataset=[sample], solver=nothing(), scorer=sealed_harbor_scorer())


def _scores() -> dict[str, dict[str, Any]]:
    outcomes = {
        "success": Outcome.success(1.0),
        "failure": Outcome.failure(0.25),
        "tamper": Outcome.agent_fault(Reason.TAMPER, "a planted reward"),
        "invalid": Outcome.invalid(Reason.VERIFIER_UNAVAILABLE, "no daemon"),
    }
    shown: dict[str, dict[str, Any]] = {}
    for name, outcome in outcomes.items():
        made = score_of(outcome, {"container": "c1"})
        value = made.value
        shown[name] = {
            "value": "NaN" if isinstance(value, float) and math.isnan(value) else value,
            "answer": made.answer,
            "reason": made.reason,
            "explanation": made.explanation,
            "metadata": made.metadata,
        }
    return shown


async def _conformance(task_dir: str) -> dict[str, str]:
    """Each of inspect's checks of a sandbox provider that fails here, with why."""
    box = await asyncio.to_thread(start_task_container, task_dir, {})
    failed: dict[str, str] = {}
    try:
        for name, check in vars(self_check).items():
            if name.startswith("test_") and inspect.iscoroutinefunction(check):
                try:
                    await asyncio.wait_for(check(box), 120)
                except Exception as exc:
                    failed[name] = f"{type(exc).__name__}: {exc}"
    finally:
        await asyncio.to_thread(box.remove)
    return failed


if __name__ == "__main__":
    if sys.argv[1] == "scores":
        print(json.dumps(_scores()))
    elif sys.argv[1] == "tally":
        print(json.dumps(tally_of(read_eval_log(sys.argv[2])).as_metrics()))
    elif sys.argv[1] == "tally-empty":
        # What a log with no sample makes of tally_of (an eval that never ran one).
        empty = read_eval_log(sys.argv[2]).model_copy(update={"samples": []})
        try:
            tally_of(empty)
        except ValueError as exc:
            print(json.dumps({"raised": str(exc)}))
        else:
            print(json.dumps({"raised": None}))
    elif sys.argv[1] == "conformance":
        print(json.dumps(asyncio.run(_conformance(sys.argv[2]))))
    else:
        raise SystemExit(f"unknown command {sys.argv[1]!r}")
