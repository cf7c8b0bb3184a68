"""What one Docker runtime made and has not removed yet, and what it froze, so that a
stopped process can remove it all (`DockerRuntime.stop`).

Containers are found by what this runtime made, not by label: another cleanroom process
on the same daemon carries the same labels, and its containers are not this one's to
remove. Once stopping, the runtime makes nothing more (`making` refuses), and the stop
waits for what was being made to be known before it removes it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from cleanroom.verifiers.container.runtime.records import RuntimeUnavailable


@dataclass(frozen=True)
class Leftovers:
    """What a stopped runtime still holds: its containers, its networks, and containers
    it froze (another harness's among them, which it must thaw, never remove)."""

    containers: tuple[str, ...]
    networks: tuple[str, ...]
    frozen: tuple[str, ...]


class MadeByRuntime:
    """The containers and networks of one runtime, as it makes, freezes and removes them."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._containers: dict[str, None] = {}
        self._networks: dict[str, None] = {}
        self._frozen: dict[str, None] = {}
        self._in_flight = 0
        self._stopping = False

    @contextmanager
    def making(self, what: str) -> Iterator[None]:
        """Around a call that makes or freezes something: refused once the runtime is
        stopping, and waited for by `stop` while it runs."""
        with self._lock:
            if self._stopping:
                raise RuntimeUnavailable(f"{what}: the run is stopping")
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1
                self._lock.notify_all()

    def container(self, ident: str) -> None:
        with self._lock:
            self._containers[ident] = None

    def network(self, ident: str) -> None:
        with self._lock:
            self._networks[ident] = None

    def froze(self, ident: str) -> None:
        with self._lock:
            self._frozen[ident] = None

    def thawed(self, ident: str) -> None:
        with self._lock:
            self._frozen.pop(ident, None)

    def removed_container(self, ident: str) -> None:
        with self._lock:
            self._containers.pop(ident, None)
            self._frozen.pop(ident, None)

    def removed_network(self, ident: str) -> None:
        with self._lock:
            self._networks.pop(ident, None)

    def stop(self, wait_s: float) -> Leftovers:
        """Make nothing more; wait up to ``wait_s`` for what is being made; what is left."""
        with self._lock:
            self._stopping = True
            self._lock.wait_for(lambda: self._in_flight == 0, wait_s)
            return Leftovers(tuple(self._containers), tuple(self._networks), tuple(self._frozen))
