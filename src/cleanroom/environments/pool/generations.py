"""Generations and the action log: an action for an old generation is never applied.

Pure bookkeeping plus one append-only JSON-lines file. Every action names the
environment and the generation it aims at; `GenerationBook.check` refuses a stale one,
and the caller logs every action, applied or refused, with its generation, time and kind.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from cleanroom.core.breakage import Breakage
from cleanroom.environments.errors import StaleGeneration, UnknownEnvironment
from cleanroom.environments.interface import ActionRecord

ACTION_LOG = "actions.jsonl"


class GenerationBook:
    """The current generation of every environment; thread-safe."""

    def __init__(self, names: list[str] | None = None) -> None:
        self._gen: dict[str, int] = dict.fromkeys(names or [], 0)
        # Who broke a generation that a recovery left: (env, generation) -> record.
        self._left_by: dict[tuple[str, int], Breakage] = {}
        self._lock = threading.Lock()

    def add(self, name: str, generation: int = 0) -> None:
        """Start tracking an environment."""
        with self._lock:
            self._gen[name] = generation

    def current(self, name: str) -> int:
        """The environment's generation now."""
        with self._lock:
            try:
                return self._gen[name]
            except KeyError:
                raise UnknownEnvironment(f"no environment named {name!r}") from None

    def check(self, name: str, aimed: int) -> None:
        """Raise `StaleGeneration` unless ``aimed`` is the current generation."""
        current = self.current(name)
        if aimed != current:
            raise StaleGeneration(name, aimed, current, self.left_by(name, aimed))

    def raise_(self, name: str, left_by: Breakage | None = None) -> int:
        """Move the environment to its next generation and return it; ``left_by`` is who
        broke the generation it leaves (a recovery's), kept for `left_by`."""
        with self._lock:
            if name not in self._gen:
                raise UnknownEnvironment(f"no environment named {name!r}")
            if left_by is not None:
                self._left_by[(name, self._gen[name])] = left_by
            self._gen[name] += 1
            return self._gen[name]

    def left_by(self, name: str, generation: int) -> Breakage | None:
        """Who broke ``generation`` of the environment, if a recovery left it."""
        with self._lock:
            return self._left_by.get((name, generation))

    def snapshot(self) -> dict[str, int]:
        """Every environment's generation."""
        with self._lock:
            return dict(self._gen)


class ActionLog:
    """Append-only JSON lines in the run folder; every write is flushed at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the run

    def write(
        self,
        env: str,
        generation: int,
        current: int,
        kind: str,
        outcome: str,
        detail: str = "",
    ) -> ActionRecord:
        """Append one record and return it."""
        record = ActionRecord(time.time(), env, generation, current, kind, outcome, detail)
        with self._lock:
            self._fh.write(json.dumps(record.to_json(), sort_keys=True) + "\n")
            self._fh.flush()
        return record

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._fh.close()
