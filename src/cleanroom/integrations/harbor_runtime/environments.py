"""Harbor environments a verification holds: the harness's, and fresh ones of a task's
image made by Harbor's own factory, each known to the run by an id.

A fresh environment gets a trial folder of its own (never the agent's: Harbor binds a
trial's folders into its containers, and a process the agent left could write through
the agent's) and is stopped and deleted when the run removes it. Its clock is read once
against the host's, so that the times of files in it can be put on the host's clock.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harbor.environments.base import BaseEnvironment
from harbor.environments.factory import EnvironmentFactory
from harbor.models.environment_type import EnvironmentType
from harbor.models.task.task import Task as HarborTask
from harbor.models.trial.paths import TrialPaths

from cleanroom.integrations.harbor_runtime.bridge import Bridge
from cleanroom.verifiers.container.agent_state.listing import Listing
from cleanroom.verifiers.container.runtime import RuntimeUnavailable

# How long an environment may take to start (Harbor builds its image on first use).
START_LIMIT_S = 1800.0
STOP_LIMIT_S = 120.0
# Harbor's task loader matches paths with a pattern engine whose scratch space one thread
# at a time may use: tasks are loaded one at a time.
_LOADING = threading.Lock()


@dataclass(frozen=True)
class Clock:
    """Bounds on an environment's clock minus the host's, in nanoseconds."""

    low_ns: int
    high_ns: int

    def earliest_host_ns(self, env_ns: int) -> int:
        """The earliest host time an environment time can be: a time mapped so never
        looks later than it was."""
        return env_ns - self.high_ns


@dataclass
class Held:
    """One environment the run knows by ``id``."""

    id: str
    env: BaseEnvironment
    image: str  # the task folder it is an environment of
    owned: bool  # made by this runtime (stopped and deleted on removal), or the harness's
    binds: dict[Path, str] = field(default_factory=dict)  # host folder -> its path here
    read_only: tuple[str, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)
    clock: Clock | None = None
    scratch: Path | None = None
    # The processes the environment ran before anything of the run's (None: unknown).
    own_pids: tuple[int, ...] | None = None


class Environments:
    """The environments of one runtime, and how fresh ones are made."""

    def __init__(
        self,
        bridge: Bridge,
        kind: str,
        options: Mapping[str, Any] | None = None,
        session_prefix: str = "cleanroom",
    ) -> None:
        self.bridge = bridge
        self.kind = kind
        self.options = dict(options or {})
        self.session_prefix = session_prefix[:30]
        self._held: dict[str, Held] = {}
        self._tasks: dict[str, HarborTask] = {}
        self._pristine: dict[str, Future[Listing]] = {}
        self._lock = threading.Lock()

    # The environments known ------------------------------------------------------------

    def get(self, env_id: str) -> Held:
        with self._lock:
            held = self._held.get(env_id)
        if held is None:
            raise RuntimeUnavailable(f"no environment {env_id!r} in this verification")
        return held

    def adopt(self, env: BaseEnvironment, image: str) -> str:
        """Know the harness's own environment (never stopped here) under an id."""
        return self._add(Held(f"harbor-{secrets.token_hex(4)}", env, image, owned=False))

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
        """The Harbor task an image names (the task's folder)."""
        with self._lock:
            found = self._tasks.get(image)
        if found is None:
            try:
                with _LOADING:
                    found = HarborTask(Path(image))
            except Exception as exc:
                raise RuntimeUnavailable(f"Harbor cannot load the task at {image}: {exc}") from exc
            with self._lock:
                self._tasks[image] = found
        return found

    def fresh(self, image: str) -> Held:
        """A fresh environment of ``image``'s task, started, its clock read."""
        task = self.task(image)
        scratch = Path(tempfile.mkdtemp(prefix="cleanroom-harbor-"))
        paths = TrialPaths(trial_dir=scratch)
        paths.mkdir()
        session = f"{self.session_prefix}__cleanroom-{secrets.token_hex(4)}".lower()
        try:
            env = EnvironmentFactory.create_environment(
                type=EnvironmentType(self.kind),
                environment_dir=task.paths.environment_dir,
                environment_name=task.short_name,
                session_id=session,
                trial_paths=paths,
                task_env_config=task.config.environment.model_copy(deep=True),
                **self.options,
            )
        except Exception as exc:
            shutil.rmtree(scratch, ignore_errors=True)
            raise RuntimeUnavailable(f"Harbor cannot make a {self.kind} environment: {exc}") from exc
        held = Held(f"harbor-{secrets.token_hex(4)}", env, image, owned=True, scratch=scratch)
        try:
            self.bridge.call(env.start(force_build=False), f"starting {session}", START_LIMIT_S)
            held.clock = self._clock(env)
            held.own_pids = self._own_pids(env)
        except BaseException:
            self._stop(held)
            raise
        return self.get(self._add(held))

    def _clock(self, env: BaseEnvironment) -> Clock | None:
        before = time.time_ns()
        done = self.bridge.call(env.exec("date +%s%N", user="root", timeout_sec=30), "its clock")
        after = time.time_ns()
        text = (done.stdout or "").strip()
        if done.return_code != 0 or not text.isdigit():
            return None
        env_ns = int(text)
        return Clock(env_ns - after, env_ns - before)

    def _own_pids(self, env: BaseEnvironment) -> tuple[int, ...]:
        """The processes running in a fresh environment (the command's shell aside)."""
        listing = 'for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = $$ ] || echo "$p"; done'
        done = self.bridge.call(env.exec(listing, user="root", timeout_sec=30), "its processes")
        return tuple(int(w) for w in (done.stdout or "").split() if w.isdigit())

    def remove(self, env_id: str) -> None:
        """Forget an environment; stop and delete it if this runtime made it."""
        held = self.forget(env_id)
        if held is not None and held.owned:
            self._stop(held)

    def _stop(self, held: Held) -> None:
        try:
            self.bridge.call(held.env.stop(delete=True), f"stopping {held.id}", STOP_LIMIT_S)
        finally:
            if held.scratch is not None:
                shutil.rmtree(held.scratch, ignore_errors=True)

    # The pristine listing of each image ------------------------------------------------

    def pristine(self, image: str) -> Future[Listing]:
        """The listing of a fresh environment of ``image``, set by the first one made."""
        with self._lock:
            return self._pristine.setdefault(image, Future())

    def close(self) -> None:
        """Stop every environment this runtime made and still holds."""
        for held in self.all():
            try:
                self.remove(held.id)
            except RuntimeUnavailable:
                pass
