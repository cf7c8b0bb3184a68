"""One rollout end to end: image, agent phase, then verification in the chosen mode.

The entry points: `verify_path` (a task folder), `verify_task` (a loaded task, in a
rollout of cleanroom's own, `run.own_rollout`) and `verify_acted_on` (a container
another harness started, `run.existing_container`), each with sealed's
pristine control. Whatever goes wrong on the way, including a bug of cleanroom's own,
ends as an outcome with a reason, never as a traceback.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

from cleanroom.core.outcomes import Outcome, Status
from cleanroom.verifiers.container.decision.verdict import (
    Evidence,
    Verified,
    blame_state,
    control_delay,
    decide,
    needs_pristine_control,
    sound,
)
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.run.capability_check import (
    acted_on_uses_services,
    refuse_unless_capable,
    required_capabilities,
)
from cleanroom.verifiers.container.run.existing_container import (
    ActedOn,
    verify_existing_container,
)
from cleanroom.verifiers.container.run.own_rollout import run_rollout
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, VerificationRuntime
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task, TaskError, TaskStep, load_task
from cleanroom.verifiers.container.verify_options import AgentSpec, VerifyOptions

__all__ = [
    "ActedOn",
    "AgentSpec",
    "VerifyOptions",
    "load_into",
    "verify_acted_on",
    "verify_path",
    "verify_task",
]


def load_into(ev: Evidence, task_dir: Path) -> Task | None:
    """The task in ``task_dir``; None, with what is wrong with it in ``ev``, when it
    cannot be loaded."""
    try:
        return load_task(task_dir)
    except TaskError as exc:
        ev.environment_error = str(exc)
    except Exception as exc:  # a task file no parser expected: still an outcome
        ev.environment_error = f"the task folder could not be read: {exc!r}"
    return None


def verify_path(
    task_dir: Path,
    agent: AgentSpec,
    options: VerifyOptions,
    connect: Callable[[], VerificationRuntime] = DockerRuntime.connect,
) -> Outcome:
    """Load the task folder, connect to the runtime, and verify; every failure is an
    outcome (a run the runtime cannot do is refused, as `verify_task` refuses it)."""
    ev = Evidence(options.mode, details={"task": str(task_dir), "agent": agent.label})
    task = load_into(ev, task_dir)
    if task is None:
        return decide(ev)
    try:
        runtime = connect()
    except RuntimeUnavailable as exc:
        ev.unavailable = str(exc)
        return decide(ev)
    return verify_task(task, agent, runtime, options)


def verify_task(
    task: Task, agent: AgentSpec, runtime: VerificationRuntime, options: VerifyOptions
) -> Outcome:
    """Build or reuse the task's image, run the agent phase, verify, and decide.

    In `sealed`, a verifier that fails on the agent's state in a way that state may have
    caused (over time, a junk reward, a failed setup command) runs again on the pristine
    state, as a no-op agent leaves it: the failure is the agent's 0 when the pristine run
    is clean (`verdict.blame_state`). An agent cannot make itself invalid that way.

    A run that needs what ``runtime`` cannot do (`RuntimeCapabilities`) is refused with
    `UnsupportedByRuntimeError` before anything starts.
    """
    refuse_unless_capable(task, required_capabilities(task, options, services=True), runtime)
    verified = run_rollout(task, agent, runtime, options)
    if options.mode is not Mode.SEALED:
        return verified.outcome
    control_options = VerifyOptions(options.mode, image_map=options.image_map)
    # A no-op's own run is the pristine control.
    pristine = verified if agent.kind == "noop" else None
    return _with_pristine_control(task, verified, runtime, control_options, None, pristine)


def verify_acted_on(
    task: Task,
    acted: ActedOn,
    runtime: VerificationRuntime,
    options: VerifyOptions,
    *,
    control_alongside: bool = False,
) -> Outcome:
    """Verify a container someone else started and the agent already acted in.

    The same verification `verify_task` runs after its own agent phase, with the same
    pristine control in `sealed`, on the very image the agent's container was started
    from. The container is left to its owner: frozen or killed (as the mode needs),
    never removed.

    In `sealed`, a failure the agent's state may have caused is judged against a
    pristine control run after it. ``control_alongside`` is for a harness's budget with
    no room for one after the other: the first verification of a task on its image runs
    a pristine control beside it, which every later one shares as what the verifier
    takes on that task (`_ControlRuns`); a later one that runs past a few times that
    (`verdict.control_delay`) starts a fresh control of its own beside it, since only a
    control run now answers for the machine as it is now. The solution's run (which
    decides an overrun the pristine state shares) starts beside the first verification
    too, and is shared the same way. Results are read only if the verification needs
    them.

    A verification that needs what ``runtime`` cannot do (`RuntimeCapabilities`) is
    refused with `UnsupportedByRuntimeError` before the container is touched.
    """
    services = acted_on_uses_services(task, options, bool(acted.services))
    refuse_unless_capable(task, required_capabilities(task, options, services=services), runtime)
    if options.mode is not Mode.SEALED:
        return verify_existing_container(task, acted, runtime, options).outcome
    control_options = VerifyOptions(options.mode, test_limit_s=options.test_limit_s)
    if not control_alongside:
        verified = verify_existing_container(task, acted, runtime, options)
        return _with_pristine_control(task, verified, runtime, control_options, acted.image)
    step = _step_named(task, acted.step)
    limit = options.test_limit(_verifier_limit(task, step))
    limited = replace(control_options, test_limit_s=limit)
    # The task's folders are looked at once for both controls' keys.
    task_key = _task_key(task, acted.image, limited)
    key = (*task_key, step.name if step else None)
    # The first verification of the task on its image starts the shared control; later
    # ones start a fresh control of their own only if they run long (`control_delay`).
    shared = _PRISTINE.started(key, _noop_run(task, runtime, limited, acted.image, step))
    known = shared.result() if shared.done() and shared.exception() is None else None
    late = None
    if known is not None:
        run = _noop_run_within(task, runtime, limited, acted.image, step)
        late = _LateControl(control_delay(known, limit), limit, run)
    oracle = _oracle_started(task, runtime, limited, acted.image, step, task_key)
    try:
        verified = verify_existing_container(task, acted, runtime, options)
    finally:
        if late is not None:
            late.verification_ended()
    if not needs_pristine_control(verified):
        return verified.outcome
    done = shared.result() if late is None else late.result()
    solution = None if sound(done, limit) or oracle is None else oracle.result()
    return blame_state(verified, done, limit, solution).outcome


class _LateControl:
    """A pristine control of one verification's own, started ``delay`` seconds into it
    (0: at once) unless the verification ended first, its tests limited to what is left
    of ``limit`` by then."""

    def __init__(self, delay: float, limit: float, run: Callable[[float], Verified]) -> None:
        self._future: Future[Verified] = Future()

        def go() -> None:
            try:
                self._future.set_result(run(limit - delay))
            except BaseException as exc:  # the caller that waits gets it
                self._future.set_exception(exc)

        self._timer = threading.Timer(delay, go)
        self._timer.name = "late-control"
        self._timer.start()

    def verification_ended(self) -> None:
        """The verification is over: a control not yet started never starts."""
        self._timer.cancel()

    def result(self) -> Verified:
        """The late control's run. Only a verification that ran past the delay needs one,
        and by then it has started."""
        return self._future.result()


def _with_pristine_control(
    task: Task,
    verified: Verified,
    runtime: VerificationRuntime,
    control_options: VerifyOptions,
    image: str | None,
    pristine: Verified | None = None,
) -> Outcome:
    """``verified``'s outcome, judged against a no-op's run of the same verifier (of
    the step that failed; ``pristine`` when it ran already) when the failure may be the
    agent's state's doing, and, when that run shows nothing, against the task's
    solution's (`verdict.blame_state`)."""
    if not needs_pristine_control(verified):
        return verified.outcome
    step = _step_named(task, verified.facts.step)
    limit = control_options.test_limit(_verifier_limit(task, step))
    # Run now, after the verification: it answers for the machine as it is now.
    control = pristine or _noop_run(task, runtime, control_options, image, step)()
    oracle = None
    if not sound(control, limit):
        started = _oracle_started(task, runtime, control_options, image, step)
        oracle = None if started is None else started.result()
    return blame_state(verified, control, limit, oracle).outcome


class _ControlRuns:
    """Runs whose result is a property of a task, its image and the test limit, not of
    a rollout: the pristine control and the solution's run. Each is started once in a
    process, in a thread of its own, and every verification that needs it shares that
    run (started, or done). A run that raised, or that ``keep`` refuses (a control that
    shows nothing: the daemon lost, an overrun), is started afresh when next asked for."""

    def __init__(self, name: str, keep: Callable[[Verified], bool]) -> None:
        self._name = name
        self._keep = keep
        self._runs: dict[tuple[object, ...], Future[Verified]] = {}
        self._lock = threading.Lock()

    def started(self, key: tuple[object, ...], run: Callable[[], Verified]) -> Future[Verified]:
        with self._lock:
            known = self._runs.get(key)
            if known is not None and not self._stale(known):
                return known
            fresh: Future[Verified] = Future()
            self._runs[key] = fresh

        def go() -> None:
            try:
                fresh.set_result(run())
            except BaseException as exc:  # the caller that waits gets it
                fresh.set_exception(exc)

        # Not a daemon: a process that ends waits for the run, which removes what it made.
        threading.Thread(target=go, name=self._name).start()
        return fresh

    def _stale(self, run: Future[Verified]) -> bool:
        if not run.done():
            return False
        return run.exception() is not None or not self._keep(run.result())


def _valid(control: Verified) -> bool:
    return control.outcome.status is not Status.INVALID


_PRISTINE = _ControlRuns("pristine-control", _valid)
_SOLUTIONS = _ControlRuns("solution-control", lambda _: True)


def _task_key(task: Task, image: str | None, options: VerifyOptions) -> tuple[object, ...]:
    """What a control's result depends on: the task's folders as they are now (each
    file's path, size and modification time), its image and the test limit."""
    seen: list[tuple[str, int, int]] = []
    for folder in (*task.tests_dirs, task.solution_dir, task.root / "task.toml"):
        paths = [folder] if folder.is_file() else sorted(folder.rglob("*"))
        for path in paths:
            with contextlib.suppress(OSError):
                st = path.lstat()
                seen.append((str(path), st.st_size, st.st_mtime_ns))
    return (str(task.root), image or "", options.test_limit_s, tuple(seen))


def _noop_run(
    task: Task,
    runtime: VerificationRuntime,
    options: VerifyOptions,
    image: str | None,
    step: TaskStep | None,
) -> Callable[[], Verified]:
    """A no-op's run of the task's verifier (of ``step``) on the pristine state."""
    return lambda: run_rollout(task, AgentSpec.noop(), runtime, options, image, only_step=step)


def _noop_run_within(
    task: Task,
    runtime: VerificationRuntime,
    options: VerifyOptions,
    image: str | None,
    step: TaskStep | None,
) -> Callable[[float], Verified]:
    """`_noop_run` with its tests limited to a number of seconds given later."""
    return lambda limit: _noop_run(
        task, runtime, replace(options, test_limit_s=limit), image, step
    )()


def _oracle_started(
    task: Task,
    runtime: VerificationRuntime,
    options: VerifyOptions,
    image: str | None,
    step: TaskStep | None,
    task_key: tuple[object, ...] | None = None,
) -> Future[Verified] | None:
    """The task's own solution, verified the same way, shared as the pristine control
    is (``task_key``: `_task_key`'s, when the caller has it); None for a task without
    ``solution/solve.sh`` or with steps (a step's solution needs the steps before it,
    so it is not run alone)."""
    if step is not None or task.steps or not (task.solution_dir / "solve.sh").is_file():
        return None
    return _SOLUTIONS.started(
        task_key or _task_key(task, image, options),
        lambda: run_rollout(task, AgentSpec.solution(), runtime, options, image),
    )


def _step_named(task: Task, name: str | None) -> TaskStep | None:
    """The step of that name (the one whose verification ended a multi-step rollout, or
    the one another harness had verified), or None for a task without steps."""
    return next((step for step in task.steps if step.name == name), None)


def _verifier_limit(task: Task, step: TaskStep | None) -> float:
    return step.config.verifier.timeout_sec if step else task.config.verifier.timeout_sec
