"""The gate every action passes: its generation checked, its outcome logged, and a
failure told apart from a part of the environment that broke (and who broke it).

Reset and recovery raise the generation before they touch anything, so an action that
arrives while they run is refused once they finish. Who broke an environment is judged
from what is dead in it (`core.breakage.judge`); a fault the harness injected itself is
said first, so what breaks until the next generation is never the agent's doing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cleanroom.core.breakage import Breakage, Evidence, judge
from cleanroom.environments.errors import (
    DisplayHeld,
    EnvironmentBroken,
    NoSuchWindow,
    PoolError,
    StaleGeneration,
    UnknownEnvironment,
)
from cleanroom.environments.pool.generations import ACTION_LOG, ActionLog, GenerationBook
from cleanroom.store.rundb import RunStore


class UncheckedGenerationBook(GenerationBook):
    """A generation book whose check passes every generation (the fault, on purpose)."""

    def check(self, name: str, aimed: int) -> None:
        """Accept ``aimed`` whatever it is (the environment must still exist)."""
        self.current(name)


# How long a failed action waits for the part of the environment it needed to be seen dead.
FAILURE_SETTLE_S = 2.0


class Gate:
    """Generations, locks, the action log and breakage attribution of one pool."""

    def __init__(
        self,
        run_dir: Path,
        evidence: Callable[[str, str | None], Evidence],
        store: RunStore | None = None,
    ) -> None:
        self.book = GenerationBook()
        self.log = ActionLog(run_dir / ACTION_LOG)
        self.store = store
        self.on_generation: list[Callable[[str, int, str], None]] = []
        self._evidence = evidence
        self._locks: dict[str, threading.RLock] = {}
        # Faults the harness injected into an environment (a test's kill), until its
        # next generation: what breaks then is never the agent's doing.
        self._injected: dict[str, str] = {}

    def add(self, name: str) -> None:
        """Start gating environment ``name`` at generation 0."""
        self._locks[name] = threading.RLock()
        self.book.add(name)

    def lock(self, name: str) -> threading.RLock:
        """The environment's lock: held while an action, reset or recovery runs."""
        try:
            return self._locks[name]
        except KeyError:
            raise UnknownEnvironment(f"no environment named {name!r}") from None

    def check(self, name: str, generation: int, kind: str) -> None:
        """Pass if ``generation`` is current; otherwise log and raise `StaleGeneration`."""
        try:
            self.book.check(name, generation)
        except StaleGeneration as exc:
            self.log.write(name, generation, exc.current, kind, "refused-stale")
            raise

    @contextmanager
    def unchecked(self) -> Iterator[None]:
        """Within the block every generation passes the check (a deliberate fault, the
        stale-generation check's leaky control); generations still count up, and the
        book leaves the block with them."""
        honest = self.book
        faulty = UncheckedGenerationBook()
        for name, generation in honest.snapshot().items():
            faulty.add(name, generation)
        self.book = faulty
        try:
            yield
        finally:
            for name, generation in faulty.snapshot().items():
                honest.add(name, generation)
            self.book = honest

    def raise_generation(self, name: str, why: str, left_by: Breakage | None = None) -> int:
        """Move ``name`` to its next generation (recorded, and told to every hook)."""
        generation = self.book.raise_(name, left_by)
        self._injected.pop(name, None)
        if self.store is not None:
            self.store.set_generation(name, generation)
        for hook in self.on_generation:
            hook(name, generation, why)
        return generation

    def inject_fault(self, name: str, what: str) -> None:
        """Say, before the harness breaks an environment itself (a test's kill), that
        what breaks in it until its next generation is the harness's doing."""
        self.lock(name)
        self._injected[name] = what

    def breakage(self, name: str) -> Breakage | None:
        """Who broke the environment, judged from what is dead in it now (None: nothing)."""
        return judge(self._evidence(name, self._injected.get(name)))

    def _broken(self, name: str, settle_s: float) -> Breakage | None:
        """`breakage`, looked at again for up to ``settle_s``: a program that closed its
        window is still ending when the action that needed the window fails."""
        deadline = time.monotonic() + settle_s
        while True:
            found = self.breakage(name)
            if found is not None or time.monotonic() >= deadline:
                return found
            time.sleep(0.1)

    def failed(self, name: str, generation: int, kind: str, exc: Exception) -> PoolError:
        """What a failed action or observation raises: `EnvironmentBroken` when part of
        the environment is dead (with who broke it), else the pool's own error.

        A named failure of the pool's own says what it is, so the environment is looked
        at once; anything else (the X connection, a reader) or a window that is gone may
        be a part of the environment on its way out, so it is looked at again for a
        moment. A window that is gone from a whole environment is the agent's mistake:
        `NoSuchWindow` is logged as rejected and returned as it is. A display a client
        held (`DisplayHeld`) is the environment's own act, said as it is: the connection
        the deadline shut under it is the harness's doing, not what broke it."""
        if isinstance(exc, DisplayHeld):
            self.log.write(name, generation, generation, kind, "failed", repr(exc))
            return exc
        settle = isinstance(exc, NoSuchWindow) or not isinstance(exc, PoolError)
        broken = self._broken(name, FAILURE_SETTLE_S if settle else 0.0)
        if broken is None and isinstance(exc, NoSuchWindow):
            self.log.write(name, generation, generation, kind, "rejected", str(exc))
            return exc
        self.log.write(name, generation, generation, kind, "failed", repr(exc))
        if broken is not None:
            return EnvironmentBroken(name, generation, broken)
        if isinstance(exc, PoolError):
            return exc
        return PoolError(f"{name}: {kind} failed: {exc}")
