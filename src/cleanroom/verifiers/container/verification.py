"""Verifying an agent's container in a mode: the steps every rollout shares.

`Verification` sequences effects (through a `VerificationRuntime` and the host reader) and
records what it saw in an `Evidence`; `verdict.decide` alone turns that into the
outcome. Its two kinds are cleanroom's own rollout (`rollout.Rollout`) and a container
another harness started (`existing_container.ExistingContainer`).
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import secrets
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.docker_layer import ImageBuildFailed
from cleanroom.exec_result import ExecResult
from cleanroom.host_files import FileKind, ObservedFile, read_capped, remove_tree
from cleanroom.verifiers.container import artifacts, links
from cleanroom.verifiers.container.compose import MAIN
from cleanroom.verifiers.container.healthcheck import Attempt, wait_healthy
from cleanroom.verifiers.container.links import Entry, EntryKind, Resolution
from cleanroom.verifiers.container.modes import plan
from cleanroom.verifiers.container.reward import REWARD_CAP_BYTES
from cleanroom.verifiers.container.runtime import (
    Limits,
    RuntimeUnavailable,
    StateCopy,
    StateTooLarge,
    VerificationRuntime,
)
from cleanroom.verifiers.container.sidecars import SidecarGroup
from cleanroom.verifiers.container.state_archive import StateArchiveError
from cleanroom.verifiers.container.tamper import (
    Change,
    ChangeKind,
    TamperReport,
    bytes_under,
    classify,
    under,
)
from cleanroom.verifiers.container.task import (
    CollectHook,
    HealthcheckConfig,
    Task,
    TaskStep,
    TemplateError,
    VerifierConfig,
    resolve_env,
)
from cleanroom.verifiers.container.verdict import (
    AgentFault,
    Evidence,
    decide,
)
from cleanroom.verifiers.container.verify_options import VerifyOptions
from cleanroom.verifiers.container.witness import read_witness

TAIL_CHARS = 2000
RESULT_CAP_BYTES = 1 << 20
TESTS_DIR = "/tests"
TEST_SCRIPT = f"{TESTS_DIR}/test.sh"
AGENT_FILES_DIR = "/tmp/cleanroom-attack"
# Where the sealed verifier finds cleanroom's Python start-up hook (bound read-only).
PYTHON_GUARD_DIR = "/run/cleanroom/python"
# Where the runner witness writes its records (`witness`), read on the host.
WITNESS_DIR = "/run/cleanroom/witness"
_PYTHON_GUARD_SOURCE = Path(__file__).with_name("python_guard")
# Tries at freezing the processes a live verifier needs (the freezer itself retries).
FREEZE_ATTEMPTS = 3
# New top-level folders carried as state; more is the agent's ``workspace_broken``.
MAX_CREATED_FOLDERS = 64
# Archives taken out of the agent's container at once.
EXPORT_THREADS = 4
_T = TypeVar("_T")


@dataclass(frozen=True)
class VerifierFolders:
    """The host folders one sealed (or separate) verifier's container gets, made fresh
    for it: what becomes ``/tests``, its reward folder, cleanroom's Python start-up hook,
    and the runner witness's records."""

    tests: Path
    reward: Path
    guard: Path
    witness: Path


class Verification:
    """Verifying an agent's container in a mode; `execute` supplies that container."""

    # Whether this run started the agent's container (and so removes it when done) and
    # made its reward folder (and so knows the mode it left it in).
    owns_agent_container = True

    def __init__(
        self, task: Task, label: str, runtime: VerificationRuntime, options: VerifyOptions
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
        # The task's compose services, when this run started them (`Rollout`).
        self.services: SidecarGroup | None = None
        # ``[[verifier.collect]]`` hooks this run owes (a harness that started the
        # agent's container runs them itself).
        self.collect_hooks: list[CollectHook] = []
        self.workspace: Path | None = None
        self.agent_reward_dir: Path | None = None
        self.background: list[threading.Thread] = []
        self.baseline: list[Change] = []
        # A sealed verifier's container started during the agent phase, with its folders
        # (`_start_verifier_early`); taken by the next `_verify_sealed`.
        self.early_verifier: tuple[Future[str], VerifierFolders] | None = None
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
        # What the sealed verifier gets of the agent's (state paths, carried artifacts):
        # its Python finds modules there and no metadata (python_guard/sitecustomize.py).
        self.agent_paths: list[str] = []
        # The runner witness's plugin name, drawn afresh so no file of the agent's can
        # name it (``-p no:...`` in an ini file of the work dir).
        self.witness_plugin = f"cleanroom_witness_{secrets.token_hex(8)}"
        # When the last test.sh returned (the wall clock, which file times use).
        self.test_ended_ns = 0

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
                image, built = self.rt.images.for_verifier(self.task, dict(self.options.image_map))
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
        self.separate_workdir = own if own is not None else self.rt.images.workdir(image)
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

    def _unhealthy(
        self, ctr: str, check: HealthcheckConfig | None, where: str = "agent"
    ) -> str | None:
        """Wait for a healthcheck in ``ctr`` (the ``agent``'s or the ``verifier``'s
        container, as the details name it); what failed, or None when healthy."""
        if check is None:
            return None

        def attempt(timeout: float) -> Attempt:
            result = self.rt.containers.exec(
                ctr, ["bash", "-c", check.command], workdir=self.workdir, timeout=timeout
            )
            if result.timed_out:
                return Attempt(False, f"over its {timeout:g} s timeout")
            return Attempt(
                result.exit_code == 0, f"exit {result.exit_code}: {output_tail(result.output, 300)}"
            )

        health = wait_healthy(check, attempt)
        self.ev.details.setdefault("healthcheck", []).append(
            {"container": where, "healthy": health.healthy, "attempts": health.attempts}
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
            there = self.rt.files.read(ctr, posixpath.join(self.workdir, "."), cap=0)
            if (there.kind, there.note) != (FileKind.OTHER, "directory"):
                self.ev.agent_fault = AgentFault(
                    Reason.WORKSPACE_BROKEN,
                    f"the work dir {self.workdir} is not a folder after the agent phase",
                )
                return
        for tests in self._tests_dirs():
            self.rt.containers.put_dir(ctr, tests, TESTS_DIR)
        deadline = time.monotonic() + self.vcfg.timeout_sec
        if not self._setup(ctr, deadline):
            return
        if self.plan.clears_reward:
            cleared = self.rt.containers.exec(
                ctr, ["rm", "-f", "--", *self.vcfg.reward_paths], user="0", workdir="/"
            )
            if cleared.exit_code != 0:
                # The harness made the reward folder; only the agent can have made its
                # reward unremovable (a directory, an immutable file, a read-only mount).
                self.ev.agent_fault = AgentFault(
                    Reason.TAMPER,
                    f"the reward could not be cleared before test.sh: rm exited "
                    f"{cleared.exit_code}: {output_tail(cleared.output, 500)}",
                )
                return
            # The rm that ran is the container's: what it left is seen through the
            # archive API (an rm the agent replaced reports success and removes nothing).
            left = [
                p
                for p in self.vcfg.reward_paths
                if self.rt.files.read(ctr, p, cap=0).kind is not FileKind.MISSING
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

    def _text_reward_in(self, ctr: str) -> ObservedFile:
        if self.ev.json_file is not None and self.ev.json_file.kind is not FileKind.MISSING:
            return ObservedFile.missing(self.vcfg.reward_path)  # JSON wins; text is not read
        return self._read_in_place(ctr, self.vcfg.reward_path)

    def _read_in_place(self, ctr: str, path: str, cap: int = REWARD_CAP_BYTES) -> ObservedFile:
        # Through the archive API, so no program of the container's answers; the red
        # team's control for a trojaned reader asks for the container's own programs.
        if self.options.in_container_reader:
            return self.rt.files.read_with_programs(ctr, path, cap)
        return self.rt.files.read(ctr, path, cap)

    # sealed: the pristine image, with the agent's state at the state paths ------------

    @property
    def verifies_apart(self) -> bool:
        """Whether test.sh runs in a container of its own (sealed, or a separate
        verifier environment in any mode) rather than in the agent's."""
        return self.separate is not None or not self.plan.in_agent_container

    def _start_verifier_early(self, agent_ctr: str | None, image: str) -> None:
        """Start the verifier's container now, beside the agent's (``agent_ctr`` None: a
        verifier that talks to no process of the agent's) or while the agent acts: it is
        made from the pristine image and depends on nothing the agent does, so its start
        (the longest wait of a sealed verification) overlaps the agent's. Nothing of the agent's
        reaches it before `_verify_sealed` installs the state: it has no network the
        agent's container is on, only the services' (where nothing of it listens) or,
        for a verifier that talks to the agent's processes, the agent's own namespace."""
        folders = self._fresh_folders()
        started = self._in_background_result(
            lambda: self._start_verifier(agent_ctr, image, folders)
        )
        self.early_verifier = (started, folders)

    def _verify_sealed(self, agent_ctr: str, image: str) -> None:
        copies: list[StateCopy] = []
        taken: list[artifacts.Collected] = []
        prefetched: list[Future[StateCopy] | None] = []
        if self.early_verifier is not None:
            starting, folders = self.early_verifier
            self.early_verifier = None
        else:
            # The verifier's container depends on nothing the agent left, so it starts
            # while the agent's is frozen and read: the two waits on the daemon overlap.
            folders = self._fresh_folders()
            starting = self._in_background_result(
                lambda: self._start_verifier(agent_ctr, image, folders)
            )
        try:
            with self._timed("freeze_s"):
                self._hold_agent_still(agent_ctr)
                if self.ev.agent_fault is not None:
                    return
                # As in Harbor when main has no further use: the services' hooks
                # run once nothing the agent left can run beside them.
                self._collect(agent_ctr, in_main=False)
                diff = self.rt.state.changes(agent_ctr)
                state_paths = self._state_paths(diff.changes)
                self.ev.details["state_paths"] = state_paths
                # The verifier's copy of the state paths is cleared while the agent's is read.
                clearing = self._in_background_result(lambda: self._cleared(starting, state_paths))
                planted = self._planted()
                # Tamper is read from the diff before anything of the agent's is handled:
                # no name, size or kind it left can turn a caught forgery into an error.
                planned = artifacts.plan(self.task.config.artifact_entries)
                offered = [i.entry.source for i in planned if i.status != "skipped"]
                watched = self.agent_reward_dir is not None
                self.ev.tamper = classify(
                    diff.changes,
                    verifier_places=(TESTS_DIR,) if watched else (TESTS_DIR, self.vcfg.reward_dir),
                    state_paths=[*state_paths, *offered],
                    planted=planted,
                    baseline=self.baseline,
                )
                if self.ev.tamper.tampered:
                    return
                declared = set(self._declared_state())
                created = sum(1 for p in state_paths if p not in declared)
                if created > MAX_CREATED_FOLDERS:
                    self.ev.agent_fault = AgentFault(
                        Reason.WORKSPACE_BROKEN,
                        f"the agent created {created} new top-level folders; at most "
                        f"{MAX_CREATED_FOLDERS} are carried to the verifier",
                    )
                    return
                # The artifacts' archives are taken beside the state's: each is a wait
                # on the daemon.
                prefetched = self._prefetch_artifacts(agent_ctr)
                copies = self._export_state(agent_ctr, state_paths, diff.changes)
                if self.ev.agent_fault is None:
                    taken = self._take_artifacts(agent_ctr, carried=True, prefetched=prefetched)
            self.ev.details["diff"] = {"source": diff.source, "entries": len(diff.changes)}
            if diff.incomplete:
                self.ev.details["diff"]["incomplete"] = diff.incomplete
            if self.vcfg.live_processes or self.more_steps:
                # Honest work lives in its processes, the verifier's or the next step's.
                self._thaw(agent_ctr)
            # The agent's stopped container stays until teardown: removing it now would
            # compete with the install below for the disk (a 20 MB venv's install took
            # 2.3 s beside the removal and 0.4 s without it).
            # What the verifier gets as an artifact it sees, as it sees the state.
            self.agent_paths = [*state_paths, *(i.entry.source for i in taken if i.carried)]
            if self.ev.agent_fault is not None:
                return
            try:
                vctr, ready = clearing.result()
                with self._timed("install_s"):
                    carried = self._carried(taken, state_paths)
                    self.rt.state.install(vctr, carried + copies, cleared=sorted(ready))
            except RuntimeUnavailable as exc:
                if exc.status is None:  # the daemon did not answer
                    raise
                why = f"the agent's state could not be installed: {exc}"
                self.ev.agent_fault = AgentFault(Reason.WORKSPACE_BROKEN, why[:800])
                return
            except UnicodeError as exc:  # a name of the agent's the API cannot carry
                why = f"the agent's state could not be installed: {exc!r}"
                self.ev.agent_fault = AgentFault(Reason.WORKSPACE_BROKEN, why[:800])
                return
            with self._timed("links_s"):
                landed = self._links_into_verifier(vctr, carried + copies)
            if landed:
                self.ev.tamper = replace(self.ev.tamper, links=tuple(str(r) for r in landed))
                self.rt.containers.kill(vctr)
                return
        finally:
            for copy in copies:
                copy.close()
            self._close(taken)
            _close_unused(prefetched)
        self._verify_on_pristine(vctr, folders)

    def _links_into_verifier(self, vctr: str, installed: list[StateCopy]) -> list[Resolution]:
        """Every link of the agent's installed in ``vctr`` that resolves there into the
        verifier's places (`links`): its tests, its reward folder, cleanroom's mounts.

        The installed archives answer for their own paths (installing made each of them
        exactly its archive); the daemon's stat answers for the image's."""
        tree: dict[str, Entry] = {}
        roots: list[str] = []
        for copy in installed:  # in install order: a later copy replaces what it covers
            tree = {p: e for p, e in tree.items() if not under(p, copy.path)}
            tree.update(copy.installed())
            roots.append(copy.path)

        def lstat(path: str) -> Entry:
            found = tree.get(path)
            if found is not None:
                return found
            if any(under(path, root) for root in roots):
                return Entry(EntryKind.MISSING)  # not in the archive that made that tree
            return self.rt.files.entry(vctr, path)

        places = (TESTS_DIR, self.vcfg.reward_dir, PYTHON_GUARD_DIR, WITNESS_DIR)
        found = [p for p, e in tree.items() if e.kind is EntryKind.LINK]
        self.ev.details["links_resolved"] = len(found)
        return links.into_places(sorted(found), lstat, places)

    def _cleared(self, starting: Future[str], state_paths: list[str]) -> tuple[str, set[str]]:
        """The verifier's container, once started, with its state paths cleared, and the
        paths that installing needs not clear: the state paths, and every artifact's
        source that the pristine image does not have (as a rule, all of them)."""
        vctr = starting.result()
        planned = artifacts.plan(self.task.config.artifact_entries)
        sources = [i.entry.source for i in planned if i.status != "skipped"]
        sources = [p for p in sources if not any(under(p, s) for s in state_paths)]
        absent = self.rt.state.clear(vctr, state_paths, probe=sources)
        return vctr, {*state_paths, *absent}

    def _hold_agent_still(self, agent_ctr: str) -> None:
        """Stop every process the agent left before its state is read.

        They are frozen (Docker's pause: a third of the time a kill takes, which also
        waits for the container to stop), and stay frozen until teardown removes the
        container (a harness's container, which outlives the verification, is killed
        instead, as before); where the verifier or a next step needs them (``live_processes``,
        more steps), they are thawed once the state is read. Freezing needs every
        process to run once, so the task's CPU limit is lifted first: busy processes
        throttled to a small ``cpus`` limit defeat Docker's cgroup-v1 freezer. The
        freezer can still give up on a loaded machine. That is a refusal the agent can
        bring about, so it is never a reason to be invalid: processes nothing needs are
        then killed, at once; processes the verifier needs get `FREEZE_ATTEMPTS`, and
        are then killed, and a verifier that needed them cannot run, which is the
        agent's 0.
        """
        if self.limits.cpus is not None:
            self.rt.containers.lift_cpu_limit(agent_ctr)
        needed = self.vcfg.live_processes or self.more_steps
        refusals: list[str] = []
        if not needed and not self.owns_agent_container:
            # A harness's container outlives this verification, and its harness stops
            # it as it left it: killed, so nothing frozen is left behind.
            self.rt.containers.kill(agent_ctr)
            self.ev.details["agent_processes"] = "killed"
            return
        for _ in range(FREEZE_ATTEMPTS if needed else 1):
            try:
                self.rt.containers.freeze(agent_ctr)
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
        self.rt.containers.kill(agent_ctr)
        self.ev.details["agent_processes"] = "killed: they could not be frozen"
        self.ev.details["freeze_refusals"] = refusals
        if needed:
            self.ev.agent_fault = AgentFault(
                Reason.UNFREEZABLE,
                f"the agent's processes, which {self._why_frozen()}, could not be frozen "
                f"for verification in {FREEZE_ATTEMPTS} attempts: "
                f"{refusals[-1][-300:]}",
            )

    def _why_frozen(self) -> str:
        if self.vcfg.live_processes:
            return "this task's verifier talks to (live_processes)"
        return "the task's next step runs on"

    def _thaw(self, agent_ctr: str) -> None:
        """Let the agent's frozen processes run again, under the task's CPU limit."""
        self.rt.containers.thaw(agent_ctr)
        if self.more_steps and self.limits.cpus is not None:
            self.rt.containers.limit_cpus(agent_ctr, self.limits.cpus)

    def _start_verifier(self, agent_ctr: str | None, image: str, folders: VerifierFolders) -> str:
        """A fresh idle container of the pristine image, its folders bound in (in the
        agent's network namespace, ``agent_ctr``, for a ``live_processes`` verifier)."""
        if self.vcfg.live_processes and agent_ctr is None:
            raise ValueError("a live_processes verifier starts once the agent's container has")
        binds = {
            folders.reward: self.vcfg.reward_dir,
            folders.guard: PYTHON_GUARD_DIR,
            folders.witness: WITNESS_DIR,
        }
        limits, environment = self.limits, self.task_env
        if self.separate is not None:
            limits = Limits.of_environment(self.separate.config, False)
            environment = self.separate_env
        if self.separate is None or not self.separate.bundled_tests:
            binds[folders.tests] = TESTS_DIR
        with self._timed("start_s"):
            vctr = self.rt.containers.start_verifier(
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
        unhealthy = self._unhealthy(vctr, config.healthcheck, "verifier")
        if unhealthy:
            raise Unhealthy(f"in the verifier's container, {unhealthy}")
        return vctr

    def _verify_on_pristine(self, vctr: str, folders: VerifierFolders) -> None:
        deadline = time.monotonic() + self.vcfg.timeout_sec
        if not self._setup(vctr, deadline) or not self._run_test(vctr, deadline):
            self.rt.containers.kill(vctr)
            return
        with self._timed("read_s"):
            self._read_results(vctr, host_reward_dir=folders.reward)
            # Nothing the verifier started may write the reward (or the witness's
            # records) while they are read.
            self.rt.containers.kill(vctr)
            reward_dir = folders.reward
            json_path, text_path = self.vcfg.reward_paths
            self.ev.json_file = read_capped(
                reward_dir, posixpath.basename(json_path), json_path, REWARD_CAP_BYTES
            )
            self.ev.text_file = read_capped(
                reward_dir, posixpath.basename(text_path), text_path, REWARD_CAP_BYTES
            )
            touched = written_after(reward_dir, self.vcfg.reward_paths, self.test_ended_ns)
            if self.plan.freezes_agent:
                self.ev.witness = read_witness(folders.witness, self.agent_paths)
                touched += self.ev.witness.touched
            if touched:
                found = self.ev.tamper or TamperReport(protected=(), planted=())
                self.ev.tamper = replace(found, touched=touched)

    def _state_paths(self, changes: list[Change]) -> list[str]:
        """The work dir, the declared state, and top-level folders the agent created,
        outermost first, none inside another.

        A top-level folder the pristine image does not have (``/output``) is state by
        default: no tool of the verifier's searches a folder that did not exist, so only
        a test that names it looks there.
        """
        if self.separate is not None:
            return []  # Harbor carries the artifacts alone to a separate verifier
        declared = self._declared_state()
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

    def _declared_state(self) -> list[str]:
        """The state paths the task names (the work dir and ``[verifier] state``)."""
        declared = [self.workdir] if self.workdir and self.workdir != "/" else []
        return [*declared, *self.vcfg.state]

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
        """The agent's state paths as checked archives, taken side by side; at the first
        path (in order) that is the agent's fault, the fault is recorded; every copy taken
        is returned, for the caller to close."""
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
                return []
        with ThreadPoolExecutor(
            min(EXPORT_THREADS, max(1, len(state_paths))), "state-export"
        ) as pool:
            taking = [pool.submit(self.rt.state.export, ctr, p, cap) for p in state_paths]
        copies = [f.result() for f in taking if f.exception() is None]
        for path, taken in zip(state_paths, taking, strict=True):
            try:
                copy = taken.result()
            except StateTooLarge as exc:
                self.ev.agent_fault = AgentFault(Reason.WORKSPACE_TOO_LARGE, str(exc))
                break
            except StateArchiveError as exc:
                # The archive arrived whole (a broken transfer is RuntimeUnavailable), so
                # what cannot be read in it is what the agent put there.
                self.ev.agent_fault = AgentFault(Reason.WORKSPACE_BROKEN, f"{path!r}: {exc}")
                break
            except RuntimeUnavailable as exc:
                if exc.status is None:  # the daemon did not answer: the infrastructure's
                    for done in copies:
                        done.close()
                    raise
                # The daemon answered, and refused what the agent left at the path.
                self.ev.agent_fault = AgentFault(Reason.WORKSPACE_BROKEN, f"{path!r}: {exc}")
                break
            except UnicodeError as exc:  # a name of the agent's the API cannot carry
                self.ev.agent_fault = AgentFault(Reason.WORKSPACE_BROKEN, f"{path!r}: {exc}")
                break
            except BaseException:
                for done in copies:
                    done.close()
                raise
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
                    f"the work dir {path} is {kind_phrase(copy.kind)} after the agent phase, "
                    "not a folder",
                )
                break
        return copies

    def _prefetch_artifacts(self, ctr: str) -> list[Future[StateCopy] | None]:
        """Start taking every artifact entry's archive out of ``ctr``, in the order of
        `artifacts.plan` (None for a skipped entry), for `_take_artifacts` to use."""
        cap = self.vcfg.state_cap_mb << 20
        planned = artifacts.plan(self.task.config.artifact_entries)
        if not any(item.status != "skipped" for item in planned):
            return []
        pool = ThreadPoolExecutor(len(planned), "artifact-export")
        try:
            return [
                None
                if item.status == "skipped"
                else pool.submit(
                    self.rt.state.export, ctr, item.entry.source, cap, artifacts.rules(item.entry)
                )
                for item in planned
            ]
        finally:
            pool.shutdown(wait=False)

    def _take_artifacts(
        self,
        ctr: str,
        *,
        carried: bool,
        prefetched: list[Future[StateCopy] | None] | None = None,
    ) -> list[artifacts.Collected]:
        """Take the agent's artifacts out of ``ctr`` (through the archive API, by the
        rules of `artifacts`; from ``prefetched``, `_prefetch_artifacts`'s, where given),
        list them in the outcome and write them to the host when asked. Where they are
        ``carried`` to the verifier, one over the state cap is the agent's
        ``workspace_too_large`` as state is; elsewhere it is only not collected."""
        cap = self.vcfg.state_cap_mb << 20
        taken = artifacts.plan(self.task.config.artifact_entries)
        try:
            for i, item in enumerate(taken):
                if item.status == "skipped":
                    continue
                try:
                    started = None
                    if prefetched:  # consumed here: closing it is now the item's job
                        started, prefetched[i] = prefetched[i], None
                    if started is not None:
                        copy = started.result()
                    else:
                        copy = self.rt.state.export(
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
                item.tree = copy.tree
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
            StateCopy(item.entry.source, item.kind, item.archive, tree=item.tree)
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

    def _fresh_folders(self) -> VerifierFolders:
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
        # The verifier may run as any uid: the witness's records are writable by each;
        # nothing but its own container mounts them.
        witness = workspace / "witness"
        witness.mkdir()
        witness.chmod(0o777)
        return VerifierFolders(tests, reward_dir, guard, witness)

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
                        f"{output_tail(result.output, 500)}"
                    )
                    return False
        return True

    def _run_test(self, ctr: str, deadline: float) -> bool:
        with self._timed("test_s"):
            result = self._as_verifier(ctr, ["bash", TEST_SCRIPT], deadline)
        self.test_ended_ns = time.time_ns()
        self.ev.test_exit_code = result.exit_code
        self.ev.details["test_output_tail"] = output_tail(result.output)
        if result.timed_out:
            self.ev.timed_out = self._over_time("test.sh")
            return False
        return True

    def _as_verifier(self, ctr: str, argv: list[str], deadline: float) -> ExecResult:
        return self.rt.containers.exec(
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
        # Python finds nothing of the agent's ahead of what the image provides, no
        # metadata and no bytecode of the agent's at all (see python_guard/sitecustomize.py),
        # and reads no user site of anyone's.
        own = self.verifier_env.get("PYTHONPATH")
        return {
            **self.verifier_env,
            "PYTHONSAFEPATH": "1",
            "PYTHONNOUSERSITE": "1",
            "CLEANROOM_STATE": json.dumps(self.agent_paths),
            "CLEANROOM_WITNESS": WITNESS_DIR,
            "CLEANROOM_WITNESS_PLUGIN": self.witness_plugin,
            "CLEANROOM_PLACES": json.dumps(
                {"sealed": [self.vcfg.reward_dir, WITNESS_DIR], "shipped": [TESTS_DIR]}
            ),
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

    def _in_background_result(self, work: Callable[[], _T]) -> Future[_T]:
        """``work`` in a thread of its own, its result (or exception) in the future;
        `teardown` waits for it before removing what the rollout made."""
        future: Future[_T] = Future()

        def run() -> None:
            try:
                future.set_result(work())
            except BaseException as exc:  # the waiter gets it from the future
                future.set_exception(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.background.append(thread)
        return future

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
                    result = self.rt.containers.exec(
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
                    output_tail=output_tail(result.output, 500),
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
                self.rt.containers.remove(ctr)
        # After the containers on its network: a network with containers cannot go.
        if self.services is not None:
            self.services.remove()
        if self.workspace is not None:
            remove_tree(self.workspace)


def written_after(reward_dir: Path, reward_paths: Iterable[str], ended_ns: int) -> tuple[str, ...]:
    """The reward files in ``reward_dir`` last written after test.sh ended (``ended_ns``,
    the wall clock): by a process left running in the verifier's container, never by
    test.sh. File times come from the same clock, coarser, so a write just after the end
    can look earlier, never the reverse."""
    late: list[str] = []
    for path in reward_paths:
        written = _written_ns(reward_dir, posixpath.basename(path))
        if written is not None and written > ended_ns:
            after = (written - ended_ns) / 1e9
            late.append(f"{path} (written {after:.3f} s after test.sh ended)")
    return tuple(late)


def _written_ns(folder: Path, name: str) -> int | None:
    """When ``folder/name`` was last written (not following a link), or None."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False).st_mtime_ns
    except OSError:
        return None
    finally:
        os.close(fd)


def _close_unused(prefetched: list[Future[StateCopy] | None]) -> None:
    """Close the archives of prefetched artifacts nothing consumed (waiting for them)."""
    for started in prefetched:
        if started is not None and started.exception() is None:
            started.result().close()


class Unhealthy(Exception):
    """The task's healthcheck failed in a container the harness started."""


def kind_phrase(kind: str) -> str:
    return {"missing": "missing", "other": "a special file"}.get(kind, f"a {kind}")


def output_tail(data: bytes, chars: int = TAIL_CHARS) -> str:
    return data.decode("utf-8", "replace")[-chars:]
