"""One rollout end to end: image, agent phase, then verification in the chosen mode.

This module only sequences effects (through `DockerRuntime` and the host reader) and
records what it saw in an `Evidence`; `verdict.decide` alone turns that into the outcome.
Whatever goes wrong on the way, including a bug of cleanroom's own, ends as an outcome
with a reason, never as a traceback.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import stat
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.host_files import read_capped, remove_tree
from cleanroom.verifiers.container import artifacts
from cleanroom.verifiers.container.compose import MAIN
from cleanroom.verifiers.container.docker_runtime import (
    DockerRuntime,
    ExecResult,
    ImageBuildFailed,
    Limits,
    RuntimeUnavailable,
    StateCopy,
    StateTooLarge,
)
from cleanroom.verifiers.container.healthcheck import Attempt, wait_healthy
from cleanroom.verifiers.container.modes import DEFAULT_MODE, Mode, plan
from cleanroom.verifiers.container.reward import REWARD_CAP_BYTES, FileKind, RewardFile
from cleanroom.verifiers.container.sidecars import ServiceFailed, SidecarGroup
from cleanroom.verifiers.container.state_archive import StateArchiveError
from cleanroom.verifiers.container.steps import StepOutcome, combine, next_step_runs
from cleanroom.verifiers.container.tamper import (
    Change,
    ChangeKind,
    bytes_under,
    classify,
    under,
)
from cleanroom.verifiers.container.task import (
    ARTIFACTS_DIR,
    CollectHook,
    HealthcheckConfig,
    Task,
    TaskError,
    TaskStep,
    TemplateError,
    VerifierConfig,
    load_task,
    resolve_env,
)
from cleanroom.verifiers.container.verdict import (
    AgentFault,
    Evidence,
    blame_state,
    decide,
    needs_pristine_control,
)

TAIL_CHARS = 2000
RESULT_CAP_BYTES = 1 << 20
TESTS_DIR = "/tests"
TEST_SCRIPT = f"{TESTS_DIR}/test.sh"
AGENT_FILES_DIR = "/tmp/cleanroom-attack"
# Where the sealed verifier finds cleanroom's Python start-up hook (bound read-only).
PYTHON_GUARD_DIR = "/run/cleanroom/python"
_PYTHON_GUARD_SOURCE = Path(__file__).with_name("python_guard")
# Tries at freezing the processes a live verifier needs (the freezer itself retries).
FREEZE_ATTEMPTS = 3


@dataclass(frozen=True)
class AgentSpec:
    """What runs in the agent phase: the task's solution, nothing, a command or a script."""

    kind: str
    text: str = ""
    label: str = ""
    # Files handed to a script in `AGENT_FILES_DIR` before it runs (an attack's payload).
    files: tuple[tuple[str, bytes], ...] = ()

    @classmethod
    def solution(cls) -> AgentSpec:
        return cls("solution", label="solution")

    @classmethod
    def noop(cls) -> AgentSpec:
        return cls("noop", label="noop")

    @classmethod
    def command(cls, command: str) -> AgentSpec:
        return cls("command", command, label=f"agent: {command}")

    @classmethod
    def script(cls, text: str, label: str, files: tuple[tuple[str, bytes], ...] = ()) -> AgentSpec:
        return cls("script", text, label=label, files=files)


@dataclass(frozen=True)
class VerifyOptions:
    """How to verify: the mode, and whether to keep containers and host folders."""

    mode: Mode = DEFAULT_MODE
    keep: bool = False
    # Base images rewritten before a task's image is built (``FROM`` lines, docker_image).
    image_map: tuple[tuple[str, str], ...] = ()
    # Where the agent's artifacts are collected on the host (Harbor's layout and
    # manifest.json); None: taken and listed in the outcome, not written.
    artifacts_dir: Path | None = None
    # ``shared`` only: read the reward with the container's own ``sh``, ``stat`` and
    # ``head`` as uid 0, as some harnesses do. Never a way to score: the red team's
    # positive control for a trojaned reader (``trojan-head``).
    in_container_reader: bool = False

    def __post_init__(self) -> None:
        if self.in_container_reader and self.mode is not Mode.SHARED:
            raise ValueError("the in-container reader is shared's positive control only")


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
    connect: Callable[[], DockerRuntime] = DockerRuntime.connect,
) -> Outcome:
    """Load the task folder, connect to Docker, and verify; every failure is an outcome."""
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
    task: Task, agent: AgentSpec, runtime: DockerRuntime, options: VerifyOptions
) -> Outcome:
    """Build or reuse the task's image, run the agent phase, verify, and decide.

    In `sealed`, a verifier that fails on the agent's state in a way that state may have
    caused (over time, a junk reward, a failed setup command) runs again on the pristine
    state, as a no-op agent leaves it: the failure is the agent's 0 when the pristine run
    is clean (`verdict.blame_state`). An agent cannot make itself invalid that way.
    """
    outcome = _verify_once(task, agent, runtime, options)
    if options.mode is not Mode.SEALED or agent.kind == "noop":
        return outcome
    if not needs_pristine_control(outcome):
        return outcome
    control_options = VerifyOptions(options.mode, image_map=options.image_map)
    step = _failed_step(task, outcome)
    control = _guarded(_Rollout(task, AgentSpec.noop(), runtime, control_options, only_step=step))
    return blame_state(outcome, control, _verifier_limit(task, step))


def _failed_step(task: Task, outcome: Outcome) -> TaskStep | None:
    """The step whose verification ended a multi-step rollout (or the one step another
    harness had verified), or None for a task without steps."""
    name = outcome.details.get("ended_at_step") or outcome.details.get("step")
    return next((step for step in task.steps if step.name == name), None)


def _verifier_limit(task: Task, step: TaskStep | None) -> float:
    return step.config.verifier.timeout_sec if step else task.config.verifier.timeout_sec


@dataclass(frozen=True)
class ActedOn:
    """A container an agent has already acted in, started by another harness (Harbor).

    ``image`` is the image it was started from, the pristine state the sealed verifier
    runs on. ``reward_dir`` is the host folder bound at the task's reward folder, watched
    for what the agent planted there; ``baseline`` is what that harness changed in the
    container before the agent started (its mount points). ``step`` names the step of a
    multi-step task the agent just did: that step is verified, and unless it is the last
    the container is left running for the next (frozen only while its state is read).
    """

    container: str
    image: str
    reward_dir: Path | None = None
    baseline: tuple[Change, ...] = ()
    label: str = "agent"
    step: str | None = None
    # The task's compose services that harness started beside it: container by name.
    services: tuple[tuple[str, str], ...] = ()


def verify_acted_on(
    task: Task, acted: ActedOn, runtime: DockerRuntime, options: VerifyOptions
) -> Outcome:
    """Verify a container someone else started and the agent already acted in.

    The same verification `verify_task` runs after its own agent phase, with the same
    pristine control in `sealed`. The container is left to its owner: frozen or killed
    (as the mode needs), never removed.
    """
    outcome = _guarded(_Existing(task, acted, runtime, options))
    if options.mode is not Mode.SEALED or not needs_pristine_control(outcome):
        return outcome
    # The control runs on the very image the agent's container was started from.
    step = _failed_step(task, outcome)
    noop = _Rollout(
        task, AgentSpec.noop(), runtime, VerifyOptions(options.mode), acted.image, only_step=step
    )
    control = _guarded(noop)
    return blame_state(outcome, control, _verifier_limit(task, step))


def _verify_once(
    task: Task, agent: AgentSpec, runtime: DockerRuntime, options: VerifyOptions
) -> Outcome:
    return _guarded(_Rollout(task, agent, runtime, options))


def _guarded(run: _Verification) -> Outcome:
    try:
        return run.execute()
    except Exception as exc:  # a bug of cleanroom's own: still an outcome, with its trace
        run.ev.harness_error = "".join(traceback.format_exception(exc))[-TAIL_CHARS:]
        return decide(run.ev)
    finally:
        with contextlib.suppress(Exception):
            run.teardown()


class _Verification:
    """Verifying an agent's container in a mode; `execute` supplies that container."""

    # Whether this run started the agent's container (and so removes it when done) and
    # made its reward folder (and so knows the mode it left it in).
    owns_agent_container = True

    def __init__(
        self, task: Task, label: str, runtime: DockerRuntime, options: VerifyOptions
    ) -> None:
        self.task = task
        self.rt = runtime
        self.options = options
        self.plan = plan(options.mode)
        self.vcfg = task.config.verifier
        self.limits = Limits.of(task)
        self.workdir = task.config.environment.workdir
        # A separate verifier environment (Harbor's environment_mode "separate"): test.sh
        # runs in a container of its own image, with the agent's artifacts only.
        self.separate = task.verifier_environment()
        self.separate_image: str | None = None
        self.separate_workdir: str | None = None
        self.separate_env: dict[str, str] = {}
        self.timings: dict[str, float] = {}
        self.ev = Evidence(options.mode)
        self.ev.details.update(task=task.name, agent=label)
        if task.warnings:
            self.ev.details["task_warnings"] = [str(w) for w in task.warnings]
        self.containers: list[str] = []
        # The task's compose services, when this run started them (`_Rollout`).
        self.services: SidecarGroup | None = None
        # ``[[verifier.collect]]`` hooks this run owes (a harness that started the
        # agent's container runs them itself).
        self.collect_hooks: list[CollectHook] = []
        self.workspace: Path | None = None
        self.agent_reward_dir: Path | None = None
        self.background: list[threading.Thread] = []
        self.baseline: list[Change] = []
        # A sealed verifier's container started during the agent phase, with its reward
        # folder (`_start_verifier_early`); taken by the next `_verify_sealed`.
        self.early_verifier: tuple[Future[str], Path] | None = None
        # The task's environments with their ${VAR} templates resolved (`_resolve_env`).
        self.task_env: dict[str, str] = {}
        self.solution_env: dict[str, str] = {}
        self.verifier_env: dict[str, str] = {}
        # [verifier.env] resolved: a step's verifier adds its own to it.
        self.task_verifier_env: dict[str, str] = {}
        # The step being verified in a multi-step task, and whether the agent's container
        # has another step to run after it (then it is left running, as Harbor leaves it).
        self.step: TaskStep | None = None
        self.more_steps = False

    def execute(self) -> Outcome:
        raise NotImplementedError

    def _verify_agent_container(self, agent_ctr: str, image: str) -> None:
        """The verification both paths share, once the agent has acted in ``agent_ctr``.

        A separate verifier runs the sealed way in every mode, as Harbor runs it: the
        agent's container is stopped and test.sh runs in a fresh container of the
        verifier's image, which gets the agent's artifacts and nothing else of it.
        """
        verify_start = time.monotonic()
        if self.separate is not None:
            assert self.separate_image is not None  # made before the agent phase
            self._verify_sealed(agent_ctr, self.separate_image)
        elif self.plan.in_agent_container:
            # Harbor collects the artifacts before its verifier runs.
            with self._timed("artifacts_s"):
                self._close(self._take_artifacts(agent_ctr, carried=False))
            # Harbor's shared verifier: the services' hooks run while main still runs.
            self._collect(agent_ctr, in_main=False)
            self._verify_in_place(agent_ctr)
        else:
            self._verify_sealed(agent_ctr, image)
        self.timings["verify_s"] = time.monotonic() - verify_start

    def _verifier_image(self) -> bool:
        """Build or find a separate verifier's image; False, with why in the evidence,
        when it cannot be made."""
        if self.separate is None:
            return True
        try:
            with self._timed("build_s"):
                image, built = self.rt.verifier_image_for(self.task, dict(self.options.image_map))
        except ImageBuildFailed as exc:
            self.ev.environment_error = f"the verifier's image {exc.tag} could not be made"
            self.ev.build_log = exc.log
            return False
        self.separate_image = image
        self.ev.details["verifier_image"] = {
            "image": image,
            "built": built,
            "tests": "in the image" if self.separate.bundled_tests else "copied in",
        }
        own = self.separate.config.workdir
        self.separate_workdir = own if own is not None else self.rt.image_workdir(image)
        return True

    @property
    def _test_workdir(self) -> str | None:
        return self.separate_workdir if self.separate is not None else self.workdir

    def _resolve_env(self) -> bool:
        """Resolve the ``${VAR}`` templates of the task's three environments from the
        host's; a variable the host lacks is the environment's fault, named."""
        host = dict(os.environ)
        cfg = self.task.config
        try:
            self.task_env = resolve_env(cfg.environment.env, host, "environment.env")
            if self.task.compose is not None:
                # The compose file's environment of main, under task.toml's (Harbor
                # merges [environment.env] over it).
                self.task_env = {**dict(self.task.compose.main_environment), **self.task_env}
            self.solution_env = resolve_env(cfg.solution.env, host, "solution.env")
            self.verifier_env = resolve_env(cfg.verifier.env, host, "verifier.env")
            own = cfg.verifier.environment
            self.separate_env = (
                resolve_env(own.env, host, "verifier.environment.env")
                if own is not None
                else self.task_env
            )
            self.task_verifier_env = dict(self.verifier_env)
        except TemplateError as exc:
            self.ev.environment_error = f"{self.task.name}/task.toml: {exc}"
            return False
        return True

    def _step_verifier(self, step: TaskStep) -> VerifierConfig | None:
        """The task's ``[verifier]`` with the step's Harbor fields over it (its env
        added to the task's, templates resolved); None, with the error, when a template
        has no value."""
        own = step.config.verifier
        task_vcfg = self.task.config.verifier
        try:
            env = resolve_env(own.env, dict(os.environ), f"steps.{step.name}.verifier.env")
        except TemplateError as exc:
            self.ev.environment_error = f"{self.task.name}/task.toml: {exc}"
            return None
        self.verifier_env = {**self.task_verifier_env, **env}
        return task_vcfg.model_copy(
            update={
                "timeout_sec": own.timeout_sec,
                "user": own.user if own.user is not None else task_vcfg.user,
                "network_mode": own.network_mode or task_vcfg.network_mode,
                "env": {**task_vcfg.env, **own.env},
            }
        )

    def _unhealthy(self, ctr: str, check: HealthcheckConfig | None) -> str | None:
        """Wait for a healthcheck in ``ctr``; what failed, or None when healthy."""
        if check is None:
            return None

        def attempt(timeout: float) -> Attempt:
            result = self.rt.exec(
                ctr, ["bash", "-c", check.command], workdir=self.workdir, timeout=timeout
            )
            if result.timed_out:
                return Attempt(False, f"over its {timeout:g} s timeout")
            return Attempt(
                result.exit_code == 0, f"exit {result.exit_code}: {_tail(result.output, 300)}"
            )

        health = wait_healthy(check, attempt)
        self.ev.details.setdefault("healthcheck", []).append(
            {"healthy": health.healthy, "attempts": health.attempts}
        )
        return None if health.healthy else health.describe(check.command)

    def _decide(self, started: float) -> Outcome:
        self.timings["total_s"] = time.monotonic() - started
        self.ev.details["timings"] = {k: round(v, 4) for k, v in self.timings.items()}
        if self.options.keep:
            self.ev.details["kept"] = {
                "containers": self.containers,
                "workspace": str(self.workspace) if self.workspace else None,
            }
            if self.services is not None:
                self.ev.details["kept"]["services"] = dict(self.services.containers)
                self.ev.details["kept"]["services_network"] = self.services.network
        return decide(self.ev)

    # shared and cleared: in the live agent container ---------------------------------

    def _verify_in_place(self, ctr: str) -> None:
        # ``shared`` is the naive baseline and does what such harnesses do: a work dir the
        # agent broke makes test.sh fail to start (invalid: the hole this check closes).
        # ``cleared`` looks through the archive API, never with a program of the
        # container's (a ``test`` the agent replaced could call a broken work dir fine).
        if self.workdir and self.plan.clears_reward:
            there = self.rt.read_file(ctr, posixpath.join(self.workdir, "."), cap=0)
            if (there.kind, there.note) != (FileKind.OTHER, "directory"):
                self.ev.agent_fault = AgentFault(
                    Reason.WORKSPACE_BROKEN,
                    f"the work dir {self.workdir} is not a folder after the agent phase",
                )
                return
        for tests in self._tests_dirs():
            self.rt.put_dir(ctr, tests, TESTS_DIR)
        deadline = time.monotonic() + self.vcfg.timeout_sec
        if not self._setup(ctr, deadline):
            return
        if self.plan.clears_reward:
            cleared = self.rt.exec(
                ctr, ["rm", "-f", "--", *self.vcfg.reward_paths], user="0", workdir="/"
            )
            if cleared.exit_code != 0:
                # The harness made the reward folder; only the agent can have made its
                # reward unremovable (a directory, an immutable file, a read-only mount).
                self.ev.agent_fault = AgentFault(
                    Reason.TAMPER,
                    f"the reward could not be cleared before test.sh: rm exited "
                    f"{cleared.exit_code}: {_tail(cleared.output, 500)}",
                )
                return
            # The rm that ran is the container's: what it left is seen through the
            # archive API (an rm the agent replaced reports success and removes nothing).
            left = [
                p
                for p in self.vcfg.reward_paths
                if self.rt.read_file(ctr, p, cap=0).kind is not FileKind.MISSING
            ]
            if left:
                self.ev.agent_fault = AgentFault(
                    Reason.TAMPER,
                    f"the reward could not be cleared before test.sh: {', '.join(left)} "
                    f"still there after rm reported success",
                )
                return
        if not self._run_test(ctr, deadline):
            return
        with self._timed("read_s"):
            self._read_results(ctr)
            self.ev.json_file = self._read_in_place(ctr, self.vcfg.reward_json_path)
            self.ev.text_file = self._text_reward_in(ctr)

    def _text_reward_in(self, ctr: str) -> RewardFile:
        if self.ev.json_file is not None and self.ev.json_file.kind is not FileKind.MISSING:
            return RewardFile.missing(self.vcfg.reward_path)  # JSON wins; text is not read
        return self._read_in_place(ctr, self.vcfg.reward_path)

    def _read_in_place(self, ctr: str, path: str, cap: int = REWARD_CAP_BYTES) -> RewardFile:
        # Through the archive API, so no program of the container's answers; the red
        # team's control for a trojaned reader asks for the container's own programs.
        if self.options.in_container_reader:
            return self.rt.read_file_in_container(ctr, path, cap)
        return self.rt.read_file(ctr, path, cap)

    # sealed: the pristine image, with the agent's state at the state paths ------------

    @property
    def verifies_apart(self) -> bool:
        """Whether test.sh runs in a container of its own (sealed, or a separate
        verifier environment in any mode) rather than in the agent's."""
        return self.separate is not None or not self.plan.in_agent_container

    def _start_verifier_early(self, agent_ctr: str, image: str) -> None:
        """Start the verifier's container now, while the agent acts: it is made from the
        pristine image and depends on nothing the agent does, so its start (the longest
        wait of a sealed verification) overlaps the agent phase. Nothing of the agent's
        reaches it before `_verify_sealed` installs the state: it has no network the
        agent's container is on, only the services' (where nothing of it listens) or,
        for a verifier that talks to the agent's processes, the agent's own namespace."""
        tests, reward_dir, guard = self._fresh_folders()
        started = self._in_background_result(
            lambda: self._start_verifier(agent_ctr, image, tests, reward_dir, guard)
        )
        self.early_verifier = (started, reward_dir)

    def _verify_sealed(self, agent_ctr: str, image: str) -> None:
        copies: list[StateCopy] = []
        taken: list[artifacts.Collected] = []
        if self.early_verifier is not None:
            starting, reward_dir = self.early_verifier
            self.early_verifier = None
        else:
            # The verifier's container depends on nothing the agent left, so it starts
            # while the agent's is frozen and read: the two waits on the daemon overlap.
            tests, reward_dir, guard = self._fresh_folders()
            starting = self._in_background_result(
                lambda: self._start_verifier(agent_ctr, image, tests, reward_dir, guard)
            )
        try:
            with self._timed("freeze_s"):
                self._hold_agent_still(agent_ctr)
                if self.ev.agent_fault is not None:
                    return
                # As in Harbor when main has no further use: the services' hooks
                # run once nothing the agent left can run beside them.
                self._collect(agent_ctr, in_main=False)
                diff = self.rt.changes(agent_ctr)
                state_paths = self._state_paths(diff.changes)
                self.ev.details["state_paths"] = state_paths
                planted = self._planted()
                copies = self._export_state(agent_ctr, state_paths, diff.changes)
                if self.ev.agent_fault is None:
                    taken = self._take_artifacts(agent_ctr, carried=True)
            self.ev.details["diff"] = {"source": diff.source, "entries": len(diff.changes)}
            if diff.incomplete:
                self.ev.details["diff"]["incomplete"] = diff.incomplete
            if self.vcfg.live_processes or self.more_steps:
                # Honest work lives in its processes, the verifier's or the next step's.
                self._thaw(agent_ctr)
            elif self.owns_agent_container:
                self._in_background(lambda: self.rt.remove(agent_ctr))
            # The reward folder is watched from the host (`_planted`) when it is
            # bound from there; otherwise what the agent wrote into it is in the diff.
            watched = self.agent_reward_dir is not None
            # What the verifier gets as an artifact it sees, as it sees the state.
            seen = [*state_paths, *(i.entry.source for i in taken if i.carried)]
            self.ev.tamper = classify(
                diff.changes,
                verifier_places=(TESTS_DIR,) if watched else (TESTS_DIR, self.vcfg.reward_dir),
                state_paths=seen,
                planted=planted,
                baseline=self.baseline,
            )
            if self.ev.tamper.tampered or self.ev.agent_fault is not None:
                return
            vctr = starting.result()
            with self._timed("install_s"):
                self.rt.install_state(vctr, self._carried(taken, state_paths) + copies)
        finally:
            for copy in copies:
                copy.close()
            self._close(taken)
        self._verify_on_pristine(vctr, reward_dir)

    def _hold_agent_still(self, agent_ctr: str) -> None:
        """Stop every process the agent left before its state is read.

        Where the verifier needs those processes (``live_processes``) they are frozen, and
        thawed once the state is read; otherwise they are killed. Either needs every
        process to run once, so the task's CPU limit is lifted first: busy processes
        throttled to a small ``cpus`` limit defeat Docker's cgroup-v1 freezer, and take
        seconds to die. The freezer can still give up on a loaded machine. That is a
        refusal the agent can bring about, so it is never a reason to be invalid: after
        `FREEZE_ATTEMPTS` the container is killed, and a verifier that needed its
        processes cannot run, which is the agent's 0.
        """
        if self.limits.cpus is not None:
            self.rt.lift_cpu_limit(agent_ctr)
        if not self.vcfg.live_processes and not self.more_steps:
            self.rt.kill(agent_ctr)
            self.ev.details["agent_processes"] = "killed"
            return
        refusals: list[str] = []
        for _ in range(FREEZE_ATTEMPTS):
            try:
                self.rt.pause(agent_ctr)
            except RuntimeUnavailable as exc:
                if exc.status is None:  # the daemon did not answer
                    raise
                refusals.append(str(exc))
                continue
            self.ev.details["agent_processes"] = "frozen"
            if refusals:
                self.ev.details["freeze_refusals"] = refusals
            return
        # Killing works where freezing did not, unless the daemon itself is failing: then
        # this raises, and the rollout is invalid.
        self.rt.kill(agent_ctr)
        self.ev.details["agent_processes"] = "killed: they could not be frozen"
        self.ev.agent_fault = AgentFault(
            Reason.UNFREEZABLE,
            f"the agent's processes, which {self._why_frozen()}, could not be frozen for "
            f"verification in {FREEZE_ATTEMPTS} attempts: "
            f"{refusals[-1][-300:]}",
        )

    def _why_frozen(self) -> str:
        if self.vcfg.live_processes:
            return "this task's verifier talks to (live_processes)"
        return "the task's next step runs on"

    def _thaw(self, agent_ctr: str) -> None:
        """Let the agent's frozen processes run again, under the task's CPU limit."""
        self.rt.unpause(agent_ctr)
        if self.more_steps and self.limits.cpus is not None:
            self.rt.limit_cpus(agent_ctr, self.limits.cpus)

    def _start_verifier(
        self, agent_ctr: str, image: str, tests: Path, reward_dir: Path, guard: Path
    ) -> str:
        """A fresh idle container of the pristine image, its folders bound in."""
        binds = {reward_dir: self.vcfg.reward_dir, guard: PYTHON_GUARD_DIR}
        limits, environment = self.limits, self.task_env
        if self.separate is not None:
            limits = Limits.of_environment(self.separate.config, False)
            environment = self.separate_env
        if self.separate is None or not self.separate.bundled_tests:
            binds[tests] = TESTS_DIR
        with self._timed("start_s"):
            vctr = self.rt.start_verifier_container(
                image,
                limits,
                "/",
                binds,
                join_network_of=agent_ctr if self.vcfg.live_processes else None,
                read_only=(PYTHON_GUARD_DIR,),
                network=(
                    self.vcfg.network_mode == "public"
                    if self.vcfg.network_mode is not None
                    else self.task.config.verifier_network
                ),
                environment=environment,
                # A separate verifier is an environment of its own, as in Harbor: the
                # agent's services reach it only through artifacts.
                services_network=(
                    self.services.network if self.services and self.separate is None else None
                ),
            )
        self.containers.append(vctr)
        # The task's readiness check holds for the verifier's environment too; it runs
        # before the agent's state is installed, so what it finds is never the agent's.
        config = self.separate.config if self.separate else self.task.config.environment
        unhealthy = self._unhealthy(vctr, config.healthcheck)
        if unhealthy:
            raise _Unhealthy(f"in the verifier's container, {unhealthy}")
        return vctr

    def _verify_on_pristine(self, vctr: str, reward_dir: Path) -> None:
        deadline = time.monotonic() + self.vcfg.timeout_sec
        if not self._setup(vctr, deadline) or not self._run_test(vctr, deadline):
            self.rt.kill(vctr)
            return
        with self._timed("read_s"):
            self._read_results(vctr, host_reward_dir=reward_dir)
            # Nothing the verifier started may write the reward while it is read.
            self.rt.kill(vctr)
            json_path, text_path = self.vcfg.reward_paths
            self.ev.json_file = read_capped(reward_dir, posixpath.basename(json_path), json_path)
            self.ev.text_file = read_capped(reward_dir, posixpath.basename(text_path), text_path)

    def _state_paths(self, changes: list[Change]) -> list[str]:
        """The work dir, the declared state, and top-level folders the agent created,
        outermost first, none inside another.

        A top-level folder the pristine image does not have (``/output``) is state by
        default: no tool of the verifier's searches a folder that did not exist, so only
        a test that names it looks there.
        """
        if self.separate is not None:
            return []  # Harbor carries the artifacts alone to a separate verifier
        declared = [self.workdir] if self.workdir and self.workdir != "/" else []
        declared += self.vcfg.state
        before = set(self.baseline)
        created = {c.path for c in changes if c.kind is ChangeKind.ADDED and c not in before}
        harness_made = {TESTS_DIR, "/solution", "/logs"}
        declared += [
            path
            for path in created
            if path.count("/") == 1
            and path not in harness_made
            and any(other.startswith(path + "/") for other in created)
        ]
        kept: list[str] = []
        for path in sorted(set(declared), key=lambda p: (p.count("/"), p)):
            if not any(under(path, outer) for outer in kept):
                kept.append(path)
        return kept

    def _planted(self) -> list[str]:
        """What the agent left in (or did to) its reward folder, seen from the host."""
        folder = self.agent_reward_dir
        if folder is None:
            return []
        found: list[str] = []
        mode = stat.S_IMODE(os.lstat(folder).st_mode)
        # Only the harness that made the folder knows the mode it was left in.
        if self.owns_agent_container and mode != 0o777:
            found.append(f"{self.vcfg.reward_dir} (its mode changed to {mode:04o})")
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name)[:20]:
                found.append(posixpath.join(self.vcfg.reward_dir, entry.name))
        return found

    def _export_state(
        self, ctr: str, state_paths: list[str], changes: list[Change]
    ) -> list[StateCopy]:
        copies: list[StateCopy] = []
        cap = self.vcfg.state_cap_mb << 20
        for path in state_paths:
            # The diff knows the apparent sizes: a 100 GiB sparse file is refused here,
            # before a byte of it is archived (the archive is capped as well).
            written = bytes_under(changes, path)
            if written > cap:
                self.ev.agent_fault = AgentFault(
                    Reason.WORKSPACE_TOO_LARGE,
                    f"the agent wrote {written >> 20} MiB into {path}, over the "
                    f"{self.vcfg.state_cap_mb} MiB cap on state to verify",
                )
                break
            try:
                copy = self.rt.export_state(ctr, path, cap)
            except StateTooLarge as exc:
                self.ev.agent_fault = AgentFault(Reason.WORKSPACE_TOO_LARGE, str(exc))
                break
            except StateArchiveError as exc:
                # The archive arrived whole (a broken transfer is RuntimeUnavailable), so
                # what cannot be read in it is what the agent put there.
                self.ev.agent_fault = AgentFault(Reason.WORKSPACE_BROKEN, f"{path}: {exc}")
                break
            copies.append(copy)
            if copy.dropped:
                self.ev.details.setdefault("state_dropped", []).extend(copy.dropped)
            if copy.too_long:
                self.ev.agent_fault = AgentFault(
                    Reason.WORKSPACE_BROKEN,
                    f"{path} holds a path within a file name of PATH_MAX: {copy.too_long}",
                )
                break
            if path == self.workdir and copy.kind != "directory":
                self.ev.agent_fault = AgentFault(
                    Reason.WORKSPACE_BROKEN,
                    f"the work dir {path} is {_a(copy.kind)} after the agent phase, not a folder",
                )
                break
        return copies

    def _take_artifacts(self, ctr: str, *, carried: bool) -> list[artifacts.Collected]:
        """Take the agent's artifacts out of ``ctr`` (through the archive API, by the
        rules of `artifacts`), list them in the outcome and write them to the host when
        asked. Where they are ``carried`` to the verifier, one over the state cap is the
        agent's ``workspace_too_large`` as state is; elsewhere it is only not collected."""
        cap = self.vcfg.state_cap_mb << 20
        taken = artifacts.plan(self.task.config.artifact_entries)
        try:
            for item in taken:
                if item.status == "skipped":
                    continue
                try:
                    copy = self.rt.export_state(
                        ctr, item.entry.source, cap, artifacts.rules(item.entry)
                    )
                except (StateTooLarge, StateArchiveError) as exc:
                    item.status, item.note = "failed", str(exc)
                    if carried:
                        reason = (
                            Reason.WORKSPACE_TOO_LARGE
                            if isinstance(exc, StateTooLarge)
                            else Reason.WORKSPACE_BROKEN
                        )
                        self.ev.agent_fault = AgentFault(reason, f"artifact {exc}")
                        break
                    continue
                item.kind, item.archive, item.dropped = copy.kind, copy.archive, copy.dropped
                item.status = artifacts.status_of(copy.kind, copy.archive)
                if copy.too_long:
                    item.status, item.note = "failed", f"a path near PATH_MAX: {copy.too_long}"
            if self.options.artifacts_dir is not None:
                artifacts.write_to_host(self.options.artifacts_dir, taken)
                self.ev.details["artifacts_dir"] = str(self.options.artifacts_dir)
        except BaseException:
            self._close(taken)
            raise
        self.ev.details["artifacts"] = [item.describe() for item in taken]
        return taken

    def _carried(self, taken: list[artifacts.Collected], state_paths: list[str]) -> list[StateCopy]:
        """The artifacts the verifier gets at their source paths, ahead of the state
        (installed after them, the state wins where the two meet). One inside a state
        path is there already, as state."""
        return [
            StateCopy(item.entry.source, item.kind, item.archive)
            for item in taken
            if item.carried and not any(under(item.entry.source, s) for s in state_paths)
        ]

    @staticmethod
    def _close(taken: list[artifacts.Collected]) -> None:
        for item in taken:
            item.close()

    def _workspace(self) -> Path:
        if self.workspace is None:
            self.workspace = Path(tempfile.mkdtemp(prefix="cleanroom-verify-"))
        return self.workspace

    def _tests_dirs(self) -> tuple[Path, ...]:
        """The task's folders that make ``/tests``, later ones copied over earlier ones."""
        return self.step.tests_dirs if self.step is not None else self.task.tests_dirs

    def _fresh_folders(self) -> tuple[Path, Path, Path]:
        workspace = self._workspace()
        if self.step is not None:  # each step's verifier gets folders of its own
            workspace = Path(tempfile.mkdtemp(prefix="step-", dir=workspace))
        tests = workspace / "tests"
        for source in self._tests_dirs():
            shutil.copytree(source, tests, symlinks=False, dirs_exist_ok=True)
        tests.mkdir(exist_ok=True)
        tests.chmod(0o755)
        reward_dir = workspace / "verifier"
        reward_dir.mkdir()
        # The verifier may run as any uid; nothing but its own container mounts this.
        reward_dir.chmod(0o777)
        guard = workspace / "python"
        shutil.copytree(_PYTHON_GUARD_SOURCE, guard, ignore=shutil.ignore_patterns("__pycache__"))
        guard.chmod(0o755)
        return tests, reward_dir, guard

    # Steps shared by every mode ------------------------------------------------------

    def _setup(self, ctr: str, deadline: float) -> bool:
        with self._timed("setup_s"):
            for n, command in enumerate(self.vcfg.setup_commands, start=1):
                result = self._as_verifier(ctr, ["bash", "-c", command], deadline)
                if result.timed_out:
                    self.ev.timed_out = self._over_time(f"setup command {n}")
                    return False
                if result.exit_code != 0:
                    self.ev.setup_failure = (
                        f"verifier setup command {n} exited {result.exit_code}: "
                        f"{_tail(result.output, 500)}"
                    )
                    return False
        return True

    def _run_test(self, ctr: str, deadline: float) -> bool:
        with self._timed("test_s"):
            result = self._as_verifier(ctr, ["bash", TEST_SCRIPT], deadline)
        self.ev.test_exit_code = result.exit_code
        self.ev.details["test_output_tail"] = _tail(result.output)
        if result.timed_out:
            self.ev.timed_out = self._over_time("test.sh")
            return False
        return True

    def _as_verifier(self, ctr: str, argv: list[str], deadline: float) -> ExecResult:
        return self.rt.exec(
            ctr,
            argv,
            user=self.vcfg.user,
            env=self._verifier_env(),
            workdir=self._test_workdir,
            timeout=max(0.0, deadline - time.monotonic()),
        )

    def _verifier_env(self) -> dict[str, str]:
        if not self.plan.freezes_agent:
            return dict(self.verifier_env)
        # Python finds nothing of the agent's ahead of what the image provides (see
        # python_guard/sitecustomize.py), and reads no user site of anyone's.
        own = self.verifier_env.get("PYTHONPATH")
        return {
            **self.verifier_env,
            "PYTHONSAFEPATH": "1",
            "PYTHONNOUSERSITE": "1",
            "PYTHONPATH": f"{PYTHON_GUARD_DIR}:{own}" if own else PYTHON_GUARD_DIR,
        }

    def _over_time(self, what: str) -> str:
        return f"{what} was still running at the verifier's {self.vcfg.timeout_sec:g} s limit"

    def _read_results(self, ctr: str, host_reward_dir: Path | None = None) -> None:
        results: dict[str, Any] = {}
        for path in self.vcfg.result_paths:
            if host_reward_dir is not None and posixpath.dirname(path) == self.vcfg.reward_dir:
                found = read_capped(
                    host_reward_dir, posixpath.basename(path), path, RESULT_CAP_BYTES
                )
            else:
                found = self._read_in_place(ctr, path, RESULT_CAP_BYTES)
            entry: dict[str, Any] = {"kind": found.kind.value}
            if found.kind in (FileKind.REGULAR, FileKind.OVERSIZE):
                entry.update(size=found.size, text=found.data.decode("utf-8", "replace"))
            results[path] = entry
        if results:
            self.ev.details["results"] = results

    # Bookkeeping ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.monotonic() - start

    def _in_background_result(self, work: Callable[[], str]) -> Future[str]:
        """``work`` in a thread of its own, its result (or exception) in the future;
        `teardown` waits for it before removing what the rollout made."""
        future: Future[str] = Future()

        def run() -> None:
            try:
                future.set_result(work())
            except BaseException as exc:  # the waiter gets it from the future
                future.set_exception(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.background.append(thread)
        return future

    def _in_background(self, work: Callable[[], None]) -> None:
        def guarded() -> None:
            with contextlib.suppress(RuntimeUnavailable):
                work()

        thread = threading.Thread(target=guarded, daemon=True)
        thread.start()
        self.background.append(thread)

    def _collect(self, agent_ctr: str, *, in_main: bool) -> None:
        """Run the task's collect hooks for ``main`` (``in_main``) or for its other
        services, as Harbor does: best effort, each one's end recorded in the details,
        a failure never stopping the rollout. A daemon that does not answer still does."""
        for hook in self.collect_hooks:
            if (hook.service == MAIN) != in_main:
                continue
            if in_main:
                ctr, argv, workdir = agent_ctr, ["bash", "-c", hook.command], self.workdir
            else:
                assert self.services is not None  # load_task checked the hook's service
                ctr = self.services.containers[hook.service]
                argv, workdir = ["sh", "-c", hook.command], None
            entry: dict[str, Any] = {"service": hook.service, "command": hook.command}
            try:
                with self._timed("collect_s"):
                    result = self.rt.exec(
                        ctr, argv, user=hook.user, workdir=workdir, timeout=hook.timeout_sec
                    )
            except RuntimeUnavailable as exc:
                if exc.status is None:
                    raise
                entry["error"] = str(exc)[-500:]  # the daemon refused: a stopped container
            else:
                entry.update(
                    exit_code=result.exit_code,
                    timed_out=result.timed_out,
                    output_tail=_tail(result.output, 500),
                )
            self.ev.details.setdefault("collect", []).append(entry)

    def teardown(self) -> None:
        """Remove what this rollout created, unless asked to keep it."""
        for thread in self.background:
            thread.join()
        if self.options.keep:
            return
        with contextlib.suppress(RuntimeUnavailable):
            for ctr in self.containers:
                self.rt.remove(ctr)
        # After the containers on its network: a network with containers cannot go.
        if self.services is not None:
            self.services.remove()
        if self.workspace is not None:
            remove_tree(self.workspace)


class _Unhealthy(Exception):
    """The task's healthcheck failed in a container the harness started."""


class _Rollout(_Verification):
    """cleanroom's own rollout: the task's image, an agent container, the agent phase.

    A multi-step task runs its steps in order in the one agent container, as Harbor
    does: each step's agent phase, then its verification in the rollout's mode; the
    container goes on to the next step as that left it (`steps` makes the score).
    ``only_step`` runs that step alone, the pristine control of a step: with no agent,
    the steps before it change nothing the sealed verifier reads.
    """

    def __init__(
        self,
        task: Task,
        agent: AgentSpec,
        runtime: DockerRuntime,
        options: VerifyOptions,
        image: str | None = None,
        only_step: TaskStep | None = None,
    ) -> None:
        super().__init__(task, agent.label, runtime, options)
        self.agent = agent
        self.collect_hooks = list(task.config.verifier.collect)
        # An image already built from the task's environment; otherwise built or reused.
        self.given_image = image
        self.only_step = only_step

    def execute(self) -> Outcome:
        started = time.monotonic()
        try:
            if not self._resolve_env():
                return self._decide(started)
            with self._timed("build_s"):
                image = self._image()
                service_images = self._service_images() if image is not None else None
            if image is None or service_images is None or not self._verifier_image():
                return self._decide(started)
            if service_images:
                with self._timed("services_s"):
                    self._start_services(service_images)
            agent_ctr = self._start_agent_container(image)
            with self._timed("healthcheck_s"):
                unhealthy = self._unhealthy(agent_ctr, self.task.config.environment.healthcheck)
            if unhealthy:
                self.ev.environment_error = f"before the agent phase, {unhealthy}"
                return self._decide(started)
            if self.task.steps:
                return self._run_steps(agent_ctr, image, started)
            self._act_and_verify(agent_ctr, image)
        except RuntimeUnavailable as exc:
            self.ev.unavailable = str(exc)
        except (_Unhealthy, ServiceFailed) as exc:
            self.ev.environment_error = str(exc)
        return self._decide(started)

    def _service_images(self) -> dict[str, str] | None:
        """Each compose service's image, built or found; None (the failure in the
        evidence) when one cannot be made."""
        compose = self.task.compose
        if compose is None:
            return {}
        images: dict[str, str] = {}
        for service in compose.services:
            try:
                images[service.name] = self.rt.service_image(
                    self.task, service, dict(self.options.image_map)
                )
            except ImageBuildFailed as exc:
                self.ev.environment_error = (
                    f"the image of compose service {service.name!r} ({exc.tag}) could not be made"
                )
                self.ev.build_log = exc.log
                return None
        return images

    def _start_services(self, images: dict[str, str]) -> None:
        """Start the compose services and wait until they are ready, as ``docker compose
        up --wait`` does before Harbor starts the agent."""
        assert self.task.compose is not None
        self.services = SidecarGroup(self.rt, self.task.compose, self.task.name)
        limit = self.task.config.environment.build_timeout_sec
        self.services.start(images, self.limits.network, limit)
        self.services.wait_for_main(limit)
        self.ev.details["services"] = sorted(self.services.containers)

    def _run_steps(self, agent_ctr: str, image: str, started: float) -> Outcome:
        """Each step's agent phase and verification, in order, until one ends the run."""
        steps = [self.only_step] if self.only_step is not None else list(self.task.steps)
        # What the rollout saw before its first step holds for all of them.
        kept = ("task", "agent", "image", "image_built", "task_warnings", "healthcheck", "services")
        common = {k: v for k, v in self.ev.details.items() if k in kept}
        done: list[StepOutcome] = []
        for index, step in enumerate(steps):
            self.more_steps = index < len(steps) - 1
            result = StepOutcome(step.config, self._run_step(step, agent_ctr, image))
            done.append(result)
            if not next_step_runs(result):
                break
            if self.more_steps and self.plan.in_agent_container:
                self._reset_verifier_places(agent_ctr)
        if self.only_step is not None:
            return done[0].outcome
        details = {**common, "mode": self.options.mode.value}
        details["timings"] = {"total_s": round(time.monotonic() - started, 4)}
        return combine(done, self.task.config.reward_strategy, len(steps), details)

    def _run_step(self, step: TaskStep, agent_ctr: str, image: str) -> Outcome:
        """One step, recorded in an `Evidence` of its own and decided alone."""
        started = time.monotonic()
        self.step = step
        self.ev = Evidence(self.options.mode)
        self.ev.details.update(task=self.task.name, agent=self.agent.label, step=step.name)
        self.ev.details["image"] = image
        self.timings = {}
        try:
            vcfg = self._step_verifier(step)
            if vcfg is None:
                return self._decide(started)
            self.vcfg = vcfg
            self._act_and_verify(agent_ctr, image)
        except RuntimeUnavailable as exc:
            self.ev.unavailable = str(exc)
        except _Unhealthy as exc:
            self.ev.environment_error = str(exc)
        except Exception as exc:  # a bug of cleanroom's own: this step's outcome says so
            self.ev.harness_error = "".join(traceback.format_exception(exc))[-TAIL_CHARS:]
        return self._decide(started)

    def _reset_verifier_places(self, ctr: str) -> None:
        """Empty ``/tests`` and the reward folder a verifier used in the agent's container
        before the next step's agent phase, as Harbor does: the next step's agent sees
        no tests, and its verifier no earlier reward."""
        script = 'rm -rf -- "$1" && mkdir -p "$2" && find "$2" -mindepth 1 -delete'
        done = self.rt.exec(
            ctr, ["sh", "-c", script, "reset", TESTS_DIR, self.vcfg.reward_dir], user="0"
        )
        if done.exit_code != 0:
            # The agent may have made them unremovable; its next verification finds that.
            self.ev.details["reset_failed"] = _tail(done.output, 300)

    def _image(self) -> str | None:
        try:
            if self.given_image is not None:
                image, built = self.given_image, False
            else:
                image, built = self.rt.image_for(self.task, dict(self.options.image_map))
        except ImageBuildFailed as exc:
            self.ev.environment_error = f"the task image {exc.tag} could not be made"
            self.ev.build_log = exc.log
            return None
        self.ev.details.update(image=image, image_built=built)
        if self.workdir is None:
            self.workdir = self.rt.image_workdir(image)
        return image

    def _start_agent_container(self, image: str) -> str:
        binds: dict[Path, str] = {}
        if self.plan.freezes_agent:
            # The agent's own reward folder is a host folder, watched from the host: what
            # the agent leaves there is an attempt at forging, found without an exec.
            self.agent_reward_dir = self._workspace() / "agent-verifier"
            self.agent_reward_dir.mkdir()
            self.agent_reward_dir.chmod(0o777)
            binds[self.agent_reward_dir] = self.vcfg.reward_dir
        # The reward and log folders start empty, whatever the image holds there: what is
        # found in them afterwards is the agent's (Harbor mounts host folders there).
        hidden = sorted({self.vcfg.reward_dir, "/logs/verifier", "/logs/agent", ARTIFACTS_DIR})
        # Where the reward is read in this container, /logs is a volume: the archive API
        # that reads it does not see a tmpfs.
        ctr = self.rt.start_agent_container(
            image,
            self.limits,
            self.workdir,
            self.task.name,
            binds,
            self.task_env,
            hidden,
            logs_on_volume=not self.plan.freezes_agent,
            services_network=self.services.network if self.services else None,
        )
        self.containers.append(ctr)
        # Harbor gives the agent a world-writable /logs/verifier; the naive modes need the
        # same so that the attacks they control for are real.
        dirs = sorted({"/logs", self.vcfg.reward_dir, "/logs/agent", ARTIFACTS_DIR})
        made = self.rt.exec(
            ctr, ["sh", "-c", 'mkdir -p "$@" && chmod 0777 "$@"', "mkdirs", *dirs], user="0"
        )
        if made.exit_code != 0:
            raise RuntimeUnavailable(f"preparing {dirs} failed: {_tail(made.output)}")
        if self.plan.freezes_agent:
            # The reward folder is a bind mount: Docker makes its mount point in the
            # container's own layer whenever it copies files in (the solution), so it is
            # the harness's change, not the agent's.
            mount_points = [
                Change(self.vcfg.reward_dir, ChangeKind.ADDED),
                Change(ARTIFACTS_DIR, ChangeKind.ADDED),
            ]
            self.baseline = [*self.rt.changes(ctr).changes, *mount_points]
        return ctr

    def _act_and_verify(self, agent_ctr: str, image: str) -> None:
        """The agent phase, Harbor's collect hooks for main (before main is stopped, and
        in each step's collection of a multi-step task), then the verification."""
        if self.verifies_apart:
            self._start_verifier_early(agent_ctr, self.separate_image or image)
        with self._timed("agent_s"):
            self._agent_phase(agent_ctr)
        self._collect(agent_ctr, in_main=True)
        self._verify_agent_container(agent_ctr, image)

    def _agent_phase(self, ctr: str) -> None:
        argv = self._agent_argv(ctr)
        if argv is None:
            self.ev.details["agent_phase"] = {"ran": False}
            return
        agent = self.task.config.agent
        own = self.step.config.agent if self.step is not None else None
        result = self.rt.exec(
            ctr,
            argv,
            user=own.user if own is not None and own.user is not None else agent.user,
            env=self.solution_env if self.agent.kind == "solution" else None,
            workdir=self.workdir,
            timeout=own.timeout_sec if own is not None and own.timeout_sec else agent.timeout_sec,
        )
        self.ev.details["agent_phase"] = {
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "seconds": round(result.seconds, 3),
            "output_tail": _tail(result.output),
        }

    def _agent_argv(self, ctr: str) -> list[str] | None:
        if self.agent.kind == "noop":
            return None
        if self.agent.kind == "solution":
            solution = self.step.solution_dir if self.step is not None else self.task.solution_dir
            if not (solution / "solve.sh").is_file():
                where = f"step {self.step.name!r}" if self.step is not None else self.task.name
                raise RuntimeUnavailable(f"{where} has no solution/solve.sh")
            self.rt.put_dir(ctr, solution, "/solution")
            return ["bash", "/solution/solve.sh"]
        if self.agent.files:
            folder = self._workspace() / "agent-files"
            folder.mkdir(exist_ok=True)
            for name, data in self.agent.files:
                (folder / name).write_bytes(data)
            self.rt.put_dir(ctr, folder, AGENT_FILES_DIR)
        return ["bash", "-c", self.agent.text]


class _Existing(_Verification):
    """A container another harness started and the agent acted in (`ActedOn`), after the
    agent's one phase or, in a multi-step task, after one step's."""

    owns_agent_container = False

    def __init__(
        self, task: Task, acted: ActedOn, runtime: DockerRuntime, options: VerifyOptions
    ) -> None:
        super().__init__(task, acted.label, runtime, options)
        self.acted = acted
        self.agent_reward_dir = acted.reward_dir
        self.baseline = list(acted.baseline)

    def execute(self) -> Outcome:
        started = time.monotonic()
        try:
            if not self._resolve_env():
                return self._decide(started)
            self.ev.details.update(image=self.acted.image, container=self.acted.container)
            if not self._enter_step():
                return self._decide(started)
            if self.workdir is None:
                self.workdir = self.rt.image_workdir(self.acted.image)
            if not self._verifier_image():
                return self._decide(started)
            compose = self.task.compose
            sealed_apart = self.plan.freezes_agent and not self.vcfg.live_processes
            if compose is not None and self.acted.services and sealed_apart and not self.separate:
                # The sealed verifier reaches that harness's services by name, on a
                # network of its own (theirs may lead out), as in cleanroom's rollouts.
                self.services = SidecarGroup.of_another_harness(self.rt, compose, self.task.name)
                self.services.join(dict(self.acted.services))
                self.ev.details["services"] = sorted(self.services.containers)
            self._verify_agent_container(self.acted.container, self.acted.image)
        except RuntimeUnavailable as exc:
            self.ev.unavailable = str(exc)
        return self._decide(started)

    def _enter_step(self) -> bool:
        """Verify the step the harness names; False, with why in the evidence, when a
        step is named that the task lacks or none is named in a multi-step task."""
        name = self.acted.step
        if name is None and not self.task.steps:
            return True
        step = next((s for s in self.task.steps if s.name == name), None)
        if step is None:
            known = ", ".join(repr(s.name) for s in self.task.steps) or "none"
            asked = f"step {name!r}" if name is not None else "no step"
            self.ev.environment_error = (
                f"{self.task.name}: the harness asked to verify {asked}; the task's steps "
                f"are {known}"
            )
            return False
        self.ev.details["step"] = step.name
        self.step = step
        self.more_steps = step is not self.task.steps[-1]
        vcfg = self._step_verifier(step)
        if vcfg is None:
            return False
        self.vcfg = vcfg
        return True


def _a(kind: str) -> str:
    return {"missing": "missing", "other": "a special file"}.get(kind, f"a {kind}")


def _tail(data: bytes, chars: int = TAIL_CHARS) -> str:
    return data.decode("utf-8", "replace")[-chars:]
