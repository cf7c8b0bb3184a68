"""Harbor environments a verification holds: the harness's, and fresh ones of a task's
image made by Harbor's own factory, each known to the run by an id.

A fresh environment gets a trial folder of its own (never the agent's: Harbor binds a
trial's folders into its containers, and a process the agent left could write through
the agent's) and is stopped and deleted when the run removes it. Its clock is read once
against the host's, so that the times of files in it can be put on the host's clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harbor.environments.base import BaseEnvironment
from harbor.models.task.config import EnvironmentConfig
from harbor.models.task.task import Task as HarborTask
from harbor.models.task.verifier_mode import resolve_verifier_environment_definition
from harbor.models.trial.paths import TrialPaths

from cleanroom.verifiers.container.agent_state.listing import Listing
from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.runtime.harbor.bridge import Bridge
from cleanroom.verifiers.container.runtime.remote_files import Clock

# A task folder's name with this added names its separate verifier's environment.
VERIFIER_SUFFIX = "#verifier"
# How long an environment may take to start (Harbor builds its image on first use).
START_LIMIT_S = 1800.0
STOP_LIMIT_S = 120.0
# Harbor's task loader matches paths with a pattern engine whose scratch space one thread
# at a time may use: tasks are loaded one at a time.
_LOADING = threading.Lock()
# The pristine listing of each image, per environment class, options and settings, once
# per process: a loop that verifies many rollouts of a task lists its image once.
_LISTED: dict[tuple[Any, ...], Listing] = {}
_LISTED_LOCK = threading.Lock()


@dataclass
class Held:
    """One environment the run knows by ``id``."""

    id: str
    env: BaseEnvironment
    image: str  # the task folder it is an environment of
    owned: bool  # made by this runtime (stopped and deleted on removal), or the harness's
    # The agent acts (or acted) here: whatever runs here is the agent's programs.
    agent: bool = False
    binds: dict[Path, str] = field(default_factory=dict)  # host folder -> its path here
    read_only: tuple[str, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)
    clock: Clock | None = None
    scratch: Path | None = None
    # The processes the environment ran before anything of the run's (None: unknown).
    own_pids: tuple[int, ...] | None = None
    # A command of the harness's outlasted its limit in the agent's environment: the
    # agent's programs hold them, and none is run there again.
    unresponsive: bool = False
    # Files the run left here, removed by the next command it runs here (a round trip
    # of its own each would cost as much as the command that made them).
    leftovers: list[str] = field(default_factory=list)
    # The exit code and the output's tail of the command run with the first look.
    first_said: tuple[int, str] = (0, "")


class Environments:
    """The environments of one runtime, and how fresh ones are made."""

    def __init__(
        self,
        bridge: Bridge,
        environment_class: type[BaseEnvironment],
        options: Mapping[str, Any] | None = None,
        session_prefix: str = "cleanroom",
    ) -> None:
        self.bridge = bridge
        self.environment_class = environment_class
        self.options = dict(options or {})
        self.session_prefix = session_prefix[:30]
        self._held: dict[str, Held] = {}
        self._tasks: dict[str, HarborTask] = {}
        self._verifier_definitions: dict[str, Any] = {}
        self._configs: dict[str, EnvironmentConfig] = {}
        self._pristine: dict[str, Future[Listing]] = {}
        self._stopping: list[Future[None]] = []
        # Each image's working folder, once asked of a fresh environment.
        self.workdirs: dict[str, str | None] = {}
        # What makes listings differ besides the image (the places listed whole).
        self.listing_variant: tuple[str, ...] = ()
        self._lock = threading.Lock()

    @property
    def kind(self) -> str:
        """Harbor's name for the environments' type."""
        kind = self.environment_class.type()
        return str(getattr(kind, "value", kind))

    # The environments known ------------------------------------------------------------

    def get(self, env_id: str) -> Held:
        with self._lock:
            held = self._held.get(env_id)
        if held is None:
            raise RuntimeUnavailable(f"no environment {env_id!r} in this verification")
        return held

    def adopt(self, env: BaseEnvironment, image: str) -> str:
        """Know the harness's own environment (never stopped here) under an id; fresh
        environments of its image get its environment settings (the trial's overrides
        applied)."""
        with self._lock:
            self._configs.setdefault(image, env.task_env_config.model_copy(deep=True))
        held = Held(f"harbor-{secrets.token_hex(4)}", env, image, owned=False, agent=True)
        return self._add(held)

    def _add(self, held: Held) -> str:
        with self._lock:
            self._held[held.id] = held
        return held.id

    def forget(self, env_id: str) -> Held | None:
        with self._lock:
            return self._held.pop(env_id, None)

    def all(self) -> list[Held]:
        with self._lock:
            return list(self._held.values())

    # Fresh environments ----------------------------------------------------------------

    def task(self, image: str) -> HarborTask:
        """The Harbor task an image names (the task's folder, or `verifier_image` of it)."""
        with self._lock:
            found = self._tasks.get(image)
        if found is None:
            try:
                with _LOADING:
                    found = HarborTask(Path(image.removesuffix(VERIFIER_SUFFIX)))
            except Exception as exc:
                raise RuntimeUnavailable(f"Harbor cannot load the task at {image}: {exc}") from exc
            with self._lock:
                self._tasks[image] = found
        return found

    def _verifier_definition(self, image: str, task: HarborTask) -> Any:
        """Harbor's resolution of ``image``'s separate verifier environment, made once
        per image under the lock. It walks the task's files through pathspec, whose
        hyperscan backend (chosen when hyperscan is installed, as cleanroom installs it)
        shares one scratch space per pattern database: two threads matching at once, a
        verification and its control fetching fresh environments side by side, fail
        with ``ScratchInUseError``."""
        with self._lock:
            if image not in self._verifier_definitions:
                self._verifier_definitions[image] = resolve_verifier_environment_definition(
                    task.config, task.paths
                )
            return self._verifier_definitions[image]

    def fresh(self, image: str, then: str = "", upload: tuple[Path, str] | None = None) -> Held:
        """A fresh environment of ``image``'s task, started, its clock read. ``upload``
        (a host file and its path there) is uploaded before the first look, and ``then``
        is run in the same call after the look (each round trip to an environment costs
        as much as the command it carries): its exit code and output's tail are
        ``first_said``."""
        task = self.task(image)
        scratch = Path(tempfile.mkdtemp(prefix="cleanroom-harbor-"))
        paths = TrialPaths(trial_dir=scratch)
        paths.mkdir()
        session = f"{self.session_prefix}__cleanroom-{secrets.token_hex(4)}".lower()
        with self._lock:
            config = self._configs.get(image) or task.config.environment
        directory, extra = task.paths.environment_dir, {}
        if image.endswith(VERIFIER_SUFFIX):
            # Harbor's own resolution of a separate verifier's environment: an image, a
            # Dockerfile in tests/, or the task's environment with the tests copied in.
            found = self._verifier_definition(image, task)
            if found is None:
                raise RuntimeUnavailable(f"{image}: the task has no separate verifier")
            directory, config = found.directory, found.config
            extra = {"enable_environment_dir_upload": not found.bundled_tests}
        try:
            env = self.environment_class(
                environment_dir=directory,
                environment_name=task.short_name,
                session_id=session,
                trial_paths=paths,
                task_env_config=config.model_copy(deep=True),
                **extra,
                **self.options,
            )
        except Exception as exc:
            shutil.rmtree(scratch, ignore_errors=True)
            raise RuntimeUnavailable(
                f"Harbor cannot make a {self.kind} environment: {exc}"
            ) from exc
        held = Held(f"harbor-{secrets.token_hex(4)}", env, image, owned=True, scratch=scratch)
        try:
            self.bridge.call(env.start(force_build=False), f"starting {session}", START_LIMIT_S)
            if upload is not None:
                self.bridge.call(env.upload_file(*upload), f"uploading to {session}")
            held.clock, cwd, held.own_pids, held.first_said = self._first_look(env, then)
            self.workdirs.setdefault(image, cwd)
        except BaseException:
            with contextlib.suppress(Exception):
                self.bridge.call(self._stop(held), f"stopping {session}", STOP_LIMIT_S + 10)
            raise
        return self.get(self._add(held))

    def _first_look(
        self, env: BaseEnvironment, then: str = ""
    ) -> tuple[Clock | None, str | None, tuple[int, ...], tuple[int, str]]:
        """What a fresh environment says of itself, in one command: its clock (bounds
        against the host's, None if it gives no time in nanoseconds), the folder a command
        starts in when none is named (the image's working folder, or the task's
        ``workdir``), the processes it runs (the command's shell aside), and what
        ``then``, run after the look, said: its exit code and output's tail."""
        command = (
            "date +%s%N; printf '\\0'; pwd; printf '\\0'; "
            'for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = $$ ] || echo "$p"; done'
        )
        if then:
            # After the look: its processes are listed before this one starts any.
            command += (
                f"\n__cr_said=$( {{ {then}\n}} 2>&1 ); __cr_rc=$?; "
                "printf '\\0%s\\0' $__cr_rc; printf %s \"$__cr_said\" | tail -c 1000"
            )
        before = time.time_ns()
        done = self.bridge.call(
            env.exec(command, user="root", timeout_sec=120 if then else 30), "a first look"
        )
        after = time.time_ns()
        now, cwd, pids, code, said = [*(done.stdout or "").split("\0", 4), "", "", "", ""][:5]
        clock = None
        if done.return_code == 0 and now.strip().isdigit():
            env_ns = int(now.strip())
            clock = Clock(env_ns - after, env_ns - before)
        cwd = cwd.strip()
        found = cwd if cwd.startswith("/") and "\n" not in cwd else None
        then_said = (int(code) if code.isdigit() else -1, said) if then else (0, "")
        return clock, found, tuple(int(w) for w in pids.split() if w.isdigit()), then_said

    def remove(self, env_id: str) -> None:
        """Forget an environment; if this runtime made it, start stopping and deleting
        it (an engine may wait seconds for its first process to end): `close` waits for
        every stop started."""
        held = self.forget(env_id)
        if held is not None and held.owned:
            stopping = self.bridge.submit(self._stop(held))
            with self._lock:
                self._stopping.append(stopping)

    async def _stop(self, held: Held) -> None:
        try:
            # Every process but the first one goes first: an engine's stop then has no
            # process left to wait for (a first process that ignores the stop signal, as
            # `sh -c "sleep infinity"` does, would make it wait out its 10 s timeout).
            with contextlib.suppress(Exception):
                ending = held.env.exec("kill -9 -1", user="root", timeout_sec=10)
                await asyncio.wait_for(ending, 20)
            await asyncio.wait_for(held.env.stop(delete=True), STOP_LIMIT_S)
        finally:
            if held.scratch is not None:
                shutil.rmtree(held.scratch, ignore_errors=True)

    # The pristine listing of each image ------------------------------------------------

    def pristine(self, image: str) -> Future[Listing]:
        """The listing of a fresh environment of ``image``, set by the first one made (or
        by one of an earlier runtime of this process, with the same class, options and
        settings)."""
        with self._lock:
            found = self._pristine.get(image)
            if found is None:
                found = self._pristine[image] = Future()
                with _LISTED_LOCK:
                    listed = _LISTED.get(self._listing_key(image))
                if listed is not None:
                    found.set_result(listed)
            return found

    def listed(self, image: str, listing: Listing) -> None:
        """``listing`` is a fresh environment's of ``image``: the pristine one, for this
        runtime and every later one of the process like it."""
        with contextlib.suppress(InvalidStateError):  # listed by another meanwhile
            self.pristine(image).set_result(listing)
        with _LISTED_LOCK:
            _LISTED.setdefault(self._listing_key(image), listing)

    def _listing_key(self, image: str) -> tuple[Any, ...]:
        config = self._configs.get(image)
        settings = config.model_dump_json() if config is not None else ""
        options = repr(sorted(self.options.items()))
        return (self.environment_class, image, options, settings, self.listing_variant)

    def pristine_failed(self, image: str, exc: BaseException) -> None:
        """No fresh environment of ``image`` could be made or listed: say so to whoever
        waits for its listing, unless one was listed already."""
        with contextlib.suppress(InvalidStateError):
            self.pristine(image).set_exception(exc)

    def close(self) -> None:
        """Stop every environment this runtime made and still holds, and wait for every
        stop started."""
        for held in self.all():
            self.remove(held.id)
        with self._lock:
            stopping, self._stopping = self._stopping, []
        for future in stopping:
            with contextlib.suppress(Exception):
                future.result(STOP_LIMIT_S + 10)
