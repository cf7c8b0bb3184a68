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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.host_files import read_capped, remove_tree
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
from cleanroom.verifiers.container.tamper import (
    Change,
    ChangeKind,
    bytes_under,
    classify,
    under,
)
from cleanroom.verifiers.container.task import (
    CollectHook,
    Task,
    TaskError,
    TemplateError,
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
    control = _verify_once(
        task, AgentSpec.noop(), runtime, VerifyOptions(options.mode, image_map=options.image_map)
    )
    return blame_state(outcome, control, task.config.verifier.timeout_sec)


@dataclass(frozen=True)
class ActedOn:
    """A container an agent has already acted in, started by another harness (Harbor).

    ``image`` is the image it was started from, the pristine state the sealed verifier
    runs on. ``reward_dir`` is the host folder bound at the task's reward folder, watched
    for what the agent planted there; ``baseline`` is what that harness changed in the
    container before the agent started (its mount points).
    """

    container: str
    image: str
    reward_dir: Path | None = None
    baseline: tuple[Change, ...] = ()
    label: str = "agent"
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
    noop = _Rollout(task, AgentSpec.noop(), runtime, VerifyOptions(options.mode), acted.image)
    control = _guarded(noop)
    return blame_state(outcome, control, task.config.verifier.timeout_sec)


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
        # The task's environments with their ${VAR} templates resolved (`_resolve_env`).
        self.task_env: dict[str, str] = {}
        self.solution_env: dict[str, str] = {}
        self.verifier_env: dict[str, str] = {}

    def execute(self) -> Outcome:
        raise NotImplementedError

    def _verify_agent_container(self, agent_ctr: str, image: str) -> None:
        """The verification both paths share, once the agent has acted in ``agent_ctr``."""
        verify_start = time.monotonic()
        if self.plan.in_agent_container:
            # Harbor's shared mode: the services' hooks run while main still runs.
            self._collect(agent_ctr, in_main=False)
            self._verify_in_place(agent_ctr)
        else:
            self._verify_sealed(agent_ctr, image)
        self.timings["verify_s"] = time.monotonic() - verify_start

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
        except TemplateError as exc:
            self.ev.environment_error = f"{self.task.name}/task.toml: {exc}"
            return False
        return True

    def _unhealthy(self, ctr: str) -> str | None:
        """Wait for the task's healthcheck in ``ctr``; what failed, or None when healthy."""
        check = self.task.config.environment.healthcheck
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
        self.rt.put_dir(ctr, self.task.tests_dir, TESTS_DIR)
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
        # ``shared`` reads as naive harnesses do, with the container's own programs (its
        # positive control for a trojaned reader); ``cleared`` through the archive API.
        if self.plan.reads_in_container:
            return self.rt.read_file_in_container(ctr, path, cap)
        return self.rt.read_file(ctr, path, cap)

    # sealed: the pristine image, with the agent's state at the state paths ------------

    def _verify_sealed(self, agent_ctr: str, image: str) -> None:
        tests, reward_dir, guard = self._fresh_folders()
        copies: list[StateCopy] = []
        # The verifier's container depends on nothing the agent left, so it starts while
        # the agent's is frozen and read: the two waits on the daemon overlap.
        with ThreadPoolExecutor(max_workers=1) as pool:
            starting = pool.submit(self._start_verifier, agent_ctr, image, tests, reward_dir, guard)
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
                self.ev.details["diff"] = {"source": diff.source, "entries": len(diff.changes)}
                if diff.incomplete:
                    self.ev.details["diff"]["incomplete"] = diff.incomplete
                if self.vcfg.live_processes:
                    self.rt.unpause(agent_ctr)  # honest work lives in its processes
                elif self.owns_agent_container:
                    self._in_background(lambda: self.rt.remove(agent_ctr))
                # The reward folder is watched from the host (`_planted`) when it is
                # bound from there; otherwise what the agent wrote into it is in the diff.
                watched = self.agent_reward_dir is not None
                self.ev.tamper = classify(
                    diff.changes,
                    verifier_places=(TESTS_DIR,) if watched else (TESTS_DIR, self.vcfg.reward_dir),
                    state_paths=state_paths,
                    planted=planted,
                    baseline=self.baseline,
                )
                if self.ev.tamper.tampered or self.ev.agent_fault is not None:
                    return
                vctr = starting.result()
                with self._timed("install_s"):
                    self.rt.install_state(vctr, copies)
            finally:
                for copy in copies:
                    copy.close()
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
        if not self.vcfg.live_processes:
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
            f"the agent's processes, which this task's verifier talks to (live_processes), "
            f"could not be frozen for verification in {FREEZE_ATTEMPTS} attempts: "
            f"{refusals[-1][-300:]}",
        )

    def _start_verifier(
        self, agent_ctr: str, image: str, tests: Path, reward_dir: Path, guard: Path
    ) -> str:
        """A fresh idle container of the pristine image, its folders bound in."""
        with self._timed("start_s"):
            vctr = self.rt.start_verifier_container(
                image,
                self.limits,
                "/",
                {tests: TESTS_DIR, reward_dir: self.vcfg.reward_dir, guard: PYTHON_GUARD_DIR},
                join_network_of=agent_ctr if self.vcfg.live_processes else None,
                read_only=(PYTHON_GUARD_DIR,),
                network=self.task.config.verifier_network,
                environment=self.task_env,
                services_network=self.services.network if self.services else None,
            )
        self.containers.append(vctr)
        # The task's readiness check holds for the verifier's environment too; it runs
        # before the agent's state is installed, so what it finds is never the agent's.
        unhealthy = self._unhealthy(vctr)
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

    def _workspace(self) -> Path:
        if self.workspace is None:
            self.workspace = Path(tempfile.mkdtemp(prefix="cleanroom-verify-"))
        return self.workspace

    def _fresh_folders(self) -> tuple[Path, Path, Path]:
        workspace = self._workspace()
        tests = workspace / "tests"
        shutil.copytree(self.task.tests_dir, tests, symlinks=False)
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
            workdir=self.workdir,
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
    """cleanroom's own rollout: the task's image, an agent container, the agent phase."""

    def __init__(
        self,
        task: Task,
        agent: AgentSpec,
        runtime: DockerRuntime,
        options: VerifyOptions,
        image: str | None = None,
    ) -> None:
        super().__init__(task, agent.label, runtime, options)
        self.agent = agent
        self.collect_hooks = list(task.config.verifier.collect)
        # An image already built from the task's environment; otherwise built or reused.
        self.given_image = image

    def execute(self) -> Outcome:
        started = time.monotonic()
        try:
            if not self._resolve_env():
                return self._decide(started)
            with self._timed("build_s"):
                image = self._image()
                service_images = self._service_images() if image is not None else None
            if image is None or service_images is None:
                return self._decide(started)
            if service_images:
                with self._timed("services_s"):
                    self._start_services(service_images)
            agent_ctr = self._start_agent_container(image)
            with self._timed("healthcheck_s"):
                unhealthy = self._unhealthy(agent_ctr)
            if unhealthy:
                self.ev.environment_error = f"before the agent phase, {unhealthy}"
                return self._decide(started)
            with self._timed("agent_s"):
                self._agent_phase(agent_ctr)
            # Harbor's hooks for main run before main is stopped.
            self._collect(agent_ctr, in_main=True)
            self._verify_agent_container(agent_ctr, image)
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
        hidden = sorted({self.vcfg.reward_dir, "/logs/verifier", "/logs/agent"})
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
        dirs = sorted({"/logs", self.vcfg.reward_dir, "/logs/agent"})
        made = self.rt.exec(
            ctr, ["sh", "-c", 'mkdir -p "$@" && chmod 0777 "$@"', "mkdirs", *dirs], user="0"
        )
        if made.exit_code != 0:
            raise RuntimeUnavailable(f"preparing {dirs} failed: {_tail(made.output)}")
        if self.plan.freezes_agent:
            # The reward folder is a bind mount: Docker makes its mount point in the
            # container's own layer whenever it copies files in (the solution), so it is
            # the harness's change, not the agent's.
            mount_point = Change(self.vcfg.reward_dir, ChangeKind.ADDED)
            self.baseline = [*self.rt.changes(ctr).changes, mount_point]
        return ctr

    def _agent_phase(self, ctr: str) -> None:
        argv = self._agent_argv(ctr)
        if argv is None:
            self.ev.details["agent_phase"] = {"ran": False}
            return
        result = self.rt.exec(
            ctr,
            argv,
            user=self.task.config.agent.user,
            env=self.solution_env if self.agent.kind == "solution" else None,
            workdir=self.workdir,
            timeout=self.task.config.agent.timeout_sec,
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
            if not (self.task.solution_dir / "solve.sh").is_file():
                raise RuntimeUnavailable(f"{self.task.name} has no solution/solve.sh")
            self.rt.put_dir(ctr, self.task.solution_dir, "/solution")
            return ["bash", "/solution/solve.sh"]
        if self.agent.files:
            folder = self._workspace() / "agent-files"
            folder.mkdir()
            for name, data in self.agent.files:
                (folder / name).write_bytes(data)
            self.rt.put_dir(ctr, folder, AGENT_FILES_DIR)
        return ["bash", "-c", self.agent.text]


class _Existing(_Verification):
    """A container another harness started and the agent acted in (`ActedOn`)."""

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
            if self.workdir is None:
                self.workdir = self.rt.image_workdir(self.acted.image)
            compose = self.task.compose
            sealed_apart = self.plan.freezes_agent and not self.vcfg.live_processes
            if compose is not None and self.acted.services and sealed_apart:
                # The sealed verifier reaches that harness's services by name, on a
                # network of its own (theirs may lead out), as in cleanroom's rollouts.
                self.services = SidecarGroup.of_another_harness(self.rt, compose, self.task.name)
                self.services.join(dict(self.acted.services))
                self.ev.details["services"] = sorted(self.services.containers)
            self._verify_agent_container(self.acted.container, self.acted.image)
        except RuntimeUnavailable as exc:
            self.ev.unavailable = str(exc)
        return self._decide(started)


def _a(kind: str) -> str:
    return {"missing": "missing", "other": "a special file"}.get(kind, f"a {kind}")


def _tail(data: bytes, chars: int = TAIL_CHARS) -> str:
    return data.decode("utf-8", "replace")[-chars:]
