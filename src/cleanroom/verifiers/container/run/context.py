"""What one verification run knows and holds: a frozen `RunContext` (the task, the mode,
the verifier's settings, the environments resolved) that each step reads, and the
`Resources` the run made (containers, the services, host folders, threads), which vary
as it goes and are removed at its end.

A step never changes the context; what it learns (the image's work dir, the step being
verified) makes a new one (`dataclasses.replace`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from cleanroom.host_files import remove_tree
from cleanroom.verifiers.container.decision.name_files import NameFiles
from cleanroom.verifiers.container.decision.tamper import Change
from cleanroom.verifiers.container.decision.verdict import Evidence
from cleanroom.verifiers.container.modes import ModePlan, plan
from cleanroom.verifiers.container.run.sidecars import SidecarGroup
from cleanroom.verifiers.container.runtime import Limits, RuntimeUnavailable, VerificationRuntime
from cleanroom.verifiers.container.task import (
    CollectHook,
    Task,
    TaskStep,
    TemplateError,
    VerifierConfig,
    VerifierEnvironment,
    resolve_env,
)
from cleanroom.verifiers.container.verify_options import VerifyOptions

TESTS_DIR = "/tests"
TEST_SCRIPT = f"{TESTS_DIR}/test.sh"
AGENT_FILES_DIR = "/tmp/cleanroom-attack"
# Where the sealed verifier finds cleanroom's Python start-up hook (bound read-only).
PYTHON_GUARD_DIR = "/run/cleanroom/python"
# Where the runner witness writes its records (`witness`), read on the host.
WITNESS_DIR = "/run/cleanroom/witness"
PYTHON_GUARD_SOURCE = Path(__file__).parent.parent / "python_guard"
TAIL_CHARS = 2000
_T = TypeVar("_T")


@dataclass(frozen=True)
class Environments:
    """The task's environments with their ``${VAR}`` templates resolved from the host's:
    the agent's container's, the solution's, the verifier's (the task's ``[verifier.env]``
    with the step's over it), and a separate verifier's container's."""

    task: dict[str, str]
    solution: dict[str, str]
    verifier: dict[str, str]
    separate: dict[str, str]
    # The task's own ``[verifier.env]``, which a step's verifier adds its own to.
    task_verifier: dict[str, str]


@dataclass(frozen=True)
class SeparateVerifier:
    """A separate verifier environment (Harbor's ``environment_mode = "separate"``), once
    its image is made: test.sh runs in a container of that image, with the agent's
    artifacts only."""

    found: VerifierEnvironment
    image: str
    workdir: str | None


@dataclass(frozen=True)
class RunContext:
    """What every step of one verification reads; never changed once made."""

    task: Task
    options: VerifyOptions
    agent_label: str
    plan: ModePlan
    # The task's ``[verifier]``, with a step's Harbor fields over it when one is verified.
    verifier: VerifierConfig
    limits: Limits
    # The agent's work dir: the task's, else the image's own (None until it is known).
    workdir: str | None
    envs: Environments
    # Whether this run started the agent's container (and so removes it when done) and
    # made its reward folder (and so knows the mode it left it in).
    owns_agent_container: bool = True
    # Where a separate verifier runs (`Task.verifier_environment`), and its image once
    # made (`SeparateVerifier`).
    separate_environment: VerifierEnvironment | None = None
    separate: SeparateVerifier | None = None
    # ``[[verifier.collect]]`` hooks this run owes (a harness that started the agent's
    # container runs them itself).
    collect_hooks: tuple[CollectHook, ...] = ()
    # The step being verified in a multi-step task, and whether the agent's container
    # has another step to run after it (then it is left running, as Harbor leaves it).
    step: TaskStep | None = None
    more_steps: bool = False
    # The runner witness's plugin name, drawn afresh so no file of the agent's can name
    # it (``-p no:...`` in an ini file of the work dir).
    witness_plugin: str = field(default_factory=lambda: f"cleanroom_witness_{secrets.token_hex(8)}")

    @property
    def verifies_apart(self) -> bool:
        """Whether test.sh runs in a container of its own (sealed, or a separate
        verifier environment in any mode) rather than in the agent's."""
        return self.separate_environment is not None or not self.plan.in_agent_container

    @property
    def test_workdir(self) -> str | None:
        """Where the verifier's commands run."""
        return self.separate.workdir if self.separate is not None else self.workdir

    @property
    def tests_dirs(self) -> tuple[Path, ...]:
        """The task's folders that make ``/tests``, later ones copied over earlier ones."""
        return self.step.tests_dirs if self.step is not None else self.task.tests_dirs

    @property
    def needs_live_agent(self) -> bool:
        """Whether the agent's processes must live on after its state is read: the
        verifier talks to them (``live_processes``), or a next step runs on them."""
        return self.verifier.live_processes or self.more_steps

    def over_time(self, what: str) -> str:
        return f"{what} was still running at the verifier's {self.verifier.timeout_sec:g} s limit"


def new_context(
    task: Task, label: str, options: VerifyOptions, *, owns_agent_container: bool
) -> RunContext | str:
    """The context a run starts with; what is wrong (a template the host has no value
    for) as a string when there is none."""
    envs = resolve_environments(task)
    if isinstance(envs, str):
        return envs
    return RunContext(
        task=task,
        options=options,
        agent_label=label,
        plan=plan(options.mode),
        verifier=_limited(task.config.verifier, options),
        limits=Limits.of(task),
        workdir=task.config.environment.workdir,
        envs=envs,
        owns_agent_container=owns_agent_container,
        separate_environment=task.verifier_environment(),
        collect_hooks=tuple(task.config.verifier.collect) if owns_agent_container else (),
    )


def resolve_environments(task: Task) -> Environments | str:
    """Resolve the ``${VAR}`` templates of the task's environments from the host's; a
    variable the host lacks is the environment's fault, named."""
    host = dict(os.environ)
    cfg = task.config
    try:
        own_env = resolve_env(cfg.environment.env, host, "environment.env")
        if task.compose is not None:
            # The compose file's environment of main, under task.toml's (Harbor merges
            # [environment.env] over it).
            own_env = {**dict(task.compose.main_environment), **own_env}
        solution = resolve_env(cfg.solution.env, host, "solution.env")
        verifier = resolve_env(cfg.verifier.env, host, "verifier.env")
        own = cfg.verifier.environment
        separate = (
            resolve_env(own.env, host, "verifier.environment.env") if own is not None else own_env
        )
    except TemplateError as exc:
        return f"{task.name}/task.toml: {exc}"
    return Environments(own_env, solution, verifier, separate, verifier)


def _limited(verifier: VerifierConfig, options: VerifyOptions) -> VerifierConfig:
    """The task's ``[verifier]`` under the limit the options set."""
    limit = options.test_limit(verifier.timeout_sec)
    if limit == verifier.timeout_sec:
        return verifier
    return verifier.model_copy(update={"timeout_sec": limit})


def for_step(ctx: RunContext, step: TaskStep, more_steps: bool) -> RunContext | str:
    """The context of one step's verification: the task's ``[verifier]`` with the step's
    Harbor fields over it (its env added to the task's, templates resolved); what is
    wrong as a string when a template has no value."""
    own = step.config.verifier
    task_vcfg = ctx.task.config.verifier
    try:
        env = resolve_env(own.env, dict(os.environ), f"steps.{step.name}.verifier.env")
    except TemplateError as exc:
        return f"{ctx.task.name}/task.toml: {exc}"
    verifier = task_vcfg.model_copy(
        update={
            "timeout_sec": ctx.options.test_limit(own.timeout_sec),
            "user": own.user if own.user is not None else task_vcfg.user,
            "network_mode": own.network_mode or task_vcfg.network_mode,
            "env": {**task_vcfg.env, **own.env},
        }
    )
    envs = replace(ctx.envs, verifier={**ctx.envs.task_verifier, **env})
    return replace(ctx, step=step, more_steps=more_steps, verifier=verifier, envs=envs)


@dataclass(frozen=True)
class VerifierFolders:
    """The host folders one sealed (or separate) verifier's container gets, made fresh
    for it: what becomes ``/tests``, its reward folder, cleanroom's Python start-up hook,
    and the runner witness's records."""

    tests: Path
    reward: Path
    guard: Path
    witness: Path


def make_folders(root: Path, tests_dirs: Iterable[Path]) -> VerifierFolders:
    """A verifier's container's four host folders, new, under ``root``: the tests (filled
    from ``tests_dirs``), the reward folder, cleanroom's Python start-up hook and the
    runner witness's records."""
    tests = root / "tests"
    tests.mkdir()
    fill_tests(tests, tests_dirs)
    reward_dir = root / "verifier"
    reward_dir.mkdir()
    # The verifier may run as any uid; nothing but its own container mounts this.
    reward_dir.chmod(0o777)
    guard = root / "python"
    shutil.copytree(PYTHON_GUARD_SOURCE, guard, ignore=shutil.ignore_patterns("__pycache__"))
    guard.chmod(0o755)
    # The verifier may run as any uid: the witness's records are writable by each;
    # nothing but its own container mounts them.
    witness = root / "witness"
    witness.mkdir()
    witness.chmod(0o777)
    return VerifierFolders(tests, reward_dir, guard, witness)


def fill_tests(tests: Path, tests_dirs: Iterable[Path]) -> None:
    """Copy the task's tests (each of ``tests_dirs``, later ones over earlier) into
    ``tests``, links copied as what they point to, as the task author's files."""
    for source in tests_dirs:
        shutil.copytree(source, tests, symlinks=False, dirs_exist_ok=True)
    tests.chmod(0o755)  # a copy takes its source's mode; the verifier may run as any uid


class Resources:
    """What one run made and removes at its end, unless asked to keep it: containers,
    the compose services, a host folder, and threads to wait for first."""

    def __init__(self, runtime: VerificationRuntime, keep: bool) -> None:
        self.rt = runtime
        self.keep = keep
        self.containers: list[str] = []
        self.services: SidecarGroup | None = None
        self._workspace: Path | None = None
        self._background: list[threading.Thread] = []
        self._adopted: list[Path] = []
        self._after: list[Callable[[], None]] = []

    def workspace(self) -> Path:
        """The run's host folder, made on first use."""
        if self._workspace is None:
            self._workspace = Path(tempfile.mkdtemp(prefix="cleanroom-verify-"))
        return self._workspace

    def fresh_folders(self, ctx: RunContext) -> VerifierFolders:
        """New host folders for one verifier's container."""
        workspace = self.workspace()
        if ctx.step is not None:  # each step's verifier gets folders of its own
            workspace = Path(tempfile.mkdtemp(prefix="step-", dir=workspace))
        return make_folders(workspace, ctx.tests_dirs)

    def adopt(self, container: str, folder: Path) -> None:
        """Remove ``container`` and ``folder`` with what this run made (a spare verifier's
        container taken for this run, and its folders)."""
        self.containers.append(container)
        self._adopted.append(folder)

    def in_background(self, work: Callable[[], _T]) -> Future[_T]:
        """``work`` in a thread of its own, its result (or exception) in the future;
        `teardown` waits for it before removing what the run made."""
        future: Future[_T] = Future()

        def run() -> None:
            try:
                future.set_result(work())
            except BaseException as exc:  # the waiter gets it from the future
                future.set_exception(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self._background.append(thread)
        return future

    def kept(self) -> dict[str, Any]:
        """What is left for people to look at, when the run keeps it."""
        kept: dict[str, Any] = {
            "containers": list(self.containers),
            "workspace": str(self._workspace) if self._workspace else None,
        }
        if self.services is not None:
            kept["services"] = dict(self.services.containers)
            kept["services_network"] = self.services.network
        return kept

    def teardown(self) -> None:
        """Remove what this run created, unless asked to keep it."""
        for thread in self._background:
            thread.join()
        if self.keep:
            return
        # The last made first: a live verifier depends on the agent's container whose
        # network it joined, and podman refuses to remove that one while it exists. One
        # that cannot be removed does not keep the others.
        for ctr in reversed(self.containers):
            with contextlib.suppress(RuntimeUnavailable):
                self.rt.containers.remove(ctr)
        # After the containers on its network: a network with containers cannot go.
        if self.services is not None:
            self.services.remove()
        if self._workspace is not None:
            remove_tree(self._workspace)
        for folder in self._adopted:
            remove_tree(folder)
        for then in self._after:
            then()

    def after_teardown(self, then: Callable[[], None]) -> None:
        """Call ``then`` once this run's teardown has removed what it made."""
        self._after.append(then)


@dataclass(frozen=True)
class AgentContainer:
    """The agent's container, as the verification sees it: its id, the image it started
    from, the host folder bound at its reward folder (watched for what the agent planted
    there; None when nothing watches it), and what the harness changed in it before the
    agent started (its mount points); its name files as the harness took them before
    the agent acted (for a verifier that joins its network namespace; None when not
    taken)."""

    id: str
    image: str
    reward_dir: Path | None = None
    baseline: tuple[Change, ...] = ()
    name_files: NameFiles | None = None


@contextlib.contextmanager
def timed(ev: Evidence, name: str) -> Iterator[None]:
    """Add the time the block takes to ``ev.timings[name]`` (shown to people)."""
    start = time.monotonic()
    try:
        yield
    finally:
        ev.timings[name] = ev.timings.get(name, 0.0) + time.monotonic() - start


def output_tail(data: bytes, chars: int = TAIL_CHARS) -> str:
    return data.decode("utf-8", "replace")[-chars:]
