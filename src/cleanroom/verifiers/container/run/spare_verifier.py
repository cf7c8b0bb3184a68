"""A warm verifier's container per kind, for a process that verifies many rollouts.

Where the harness verifies a container another harness started (Harbor's trials, the
loops on them), the verification begins only once the agent is done: the verifier's
container would start on its critical path, the longest wait of a sealed verification
after the tests themselves. With `SpareVerifiers`, a verification takes a spare of its
kind when one is up, and the next spare is started after it ends, in the background,
while the next rollout's agent acts.

A spare is what a container started at once would be: made by the same spec from an
image of the same content (`content_of`: the same layers and configuration; Compose
builds each trial's image anew under another id), running its idle command alone, with
host folders made for it that no verification has used. Its tests folder is filled when
it is taken (a bind shows the host folder as it is then), so the tests are those on disk
at that moment. Nothing of any agent reaches it before the verification that takes it
installs the state: it has no network (a kind with one, or with the services' network
or the agent's namespace, gets no spare). A spare whose container no longer runs when it
is taken is removed, and the verification starts its own.

A spare runs an image under a name of cleanroom's (`keep_for_spares`), so that the image's
owner (Harbor's `compose down --rmi local`) still removes its own name, and the image
outlives it as long as the spare does. One spare per kind at most, where a kind is the
image's content and all of the spec but its folders' host paths. Spares are made and
removed by a runtime of the registry's own, so that the verifications' runtimes can be
closed; they go, with their images' names, when the process ends, and after a kill by
`cleanroom gc` (their labels say whose they were).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cleanroom.host_files import remove_tree
from cleanroom.verifiers.container.run.context import VerifierFolders, fill_tests, make_folders
from cleanroom.verifiers.container.runtime import (
    Limits,
    RuntimeUnavailable,
    VerifierContainerSpec,
)
from cleanroom.verifiers.container.runtime.interface import Containers

log = logging.getLogger(__name__)
# How long closing waits for a spare still starting.
CLOSE_WAIT_S = 60.0

__all__ = ["Spare", "SpareKind", "SpareRuntime", "SpareVerifiers", "spares_for"]


class SpareImages(Protocol):
    """What the spares need of a runtime's images."""

    def content_of(self, image: str) -> str:
        """The digest of what makes a container of ``image`` what it is."""
        ...

    def keep_for_spares(self, image: str, content: str) -> str:
        """A name of cleanroom's for ``image``, to start spares from."""
        ...

    def remove(self, image: str) -> None:
        """Remove an image (a name of it); missing is fine."""
        ...


class SpareRuntime(Protocol):
    """A runtime that can keep spares (a container daemon of this machine's)."""

    @property
    def images(self) -> SpareImages: ...

    @property
    def containers(self) -> Containers: ...


@dataclass(frozen=True)
class SpareKind:
    """All of a verifier's container spec but its image and its folders' host paths."""

    limits: Limits
    workdir: str | None
    # Where each folder is bound, in the order of `VerifierFolders` ("": not bound).
    places: tuple[str, ...]
    read_only: tuple[str, ...]
    environment: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Spare:
    """An idle verifier's container that is up, and the folders bound into it (under
    ``root``, which goes with it)."""

    container: str
    folders: VerifierFolders
    root: Path


_Key = tuple[str, SpareKind]  # the image's content, and the rest of the spec


class SpareVerifiers:
    """The spares of one daemon, one per kind, made by a runtime of their own."""

    def __init__(self, connect: Callable[[], SpareRuntime]) -> None:
        self._connect = connect
        self._runtime: SpareRuntime | None = None
        self._lock = threading.Lock()
        self._spares: dict[_Key, Spare] = {}
        self._starting: set[_Key] = set()
        self._names: set[str] = set()  # the image names given for spares
        self._closed = False
        self._threads: list[threading.Thread] = []
        atexit.register(self.close)

    def take(self, image: str, kind: SpareKind, tests_dirs: tuple[Path, ...]) -> Spare | None:
        """The spare of ``kind`` on an image of ``image``'s content, its tests folder
        filled from ``tests_dirs``, no longer a spare; None when none is up (or it no
        longer runs: then it is removed)."""
        with self._lock:
            if not self._spares:
                return None
        try:
            runtime = self._runtime_now()
            content = runtime.images.content_of(image)
        except RuntimeUnavailable:
            return None
        with self._lock:
            spare = self._spares.pop((content, kind), None)
        if spare is None:
            return None
        try:
            running = runtime.containers.state(spare.container).status == "running"
        except RuntimeUnavailable:
            running = False
        if not running:
            self._discard(spare)
            return None
        fill_tests(spare.folders.tests, tests_dirs)
        return spare

    def replenish(self, image: str, kind: SpareKind) -> None:
        """Start a spare of ``kind`` on ``image`` in the background, unless one of its
        kind is up or starting."""
        thread = threading.Thread(
            target=self._start, args=(image, kind), name="spare-verifier", daemon=True
        )
        with self._lock:
            if self._closed:
                return
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    def _start(self, image: str, kind: SpareKind) -> None:
        try:
            runtime = self._runtime_now()
            content = runtime.images.content_of(image)
        except RuntimeUnavailable:
            return
        key = (content, kind)
        with self._lock:
            if self._closed or key in self._spares or key in self._starting:
                return
            self._starting.add(key)
        root = Path(tempfile.mkdtemp(prefix="cleanroom-spare-"))
        try:
            name = runtime.images.keep_for_spares(image, content)
            with self._lock:
                self._names.add(name)
            folders = make_folders(root, ())
            order = [folders.tests, folders.reward, folders.guard, folders.witness]
            binds = {host: place for host, place in zip(order, kind.places, strict=True) if place}
            container = runtime.containers.start_verifier(
                VerifierContainerSpec(
                    name,
                    kind.limits,
                    kind.workdir,
                    binds,
                    read_only=kind.read_only,
                    environment=dict(kind.environment),
                )
            )
        except Exception:  # never worth an error: the next verification starts its own
            log.debug("a spare verifier's container did not start", exc_info=True)
            remove_tree(root)
            with self._lock:
                self._starting.discard(key)
            return
        spare = Spare(container, folders, root)
        with self._lock:
            self._starting.discard(key)
            if not self._closed and key not in self._spares:
                self._spares[key] = spare
                return
        self._discard(spare)

    def _runtime_now(self) -> SpareRuntime:
        with self._lock:
            if self._runtime is None:
                self._runtime = self._connect()
            return self._runtime

    def _discard(self, spare: Spare) -> None:
        runtime = self._runtime
        if runtime is not None:
            with contextlib.suppress(RuntimeUnavailable):
                runtime.containers.remove(spare.container)
        remove_tree(spare.root)

    @property
    def closed(self) -> bool:
        """Whether `close` was called: it keeps no more spares."""
        return self._closed

    def close(self) -> None:
        """Remove every spare and the names their images were given; make no more."""
        with self._lock:
            self._closed = True
            starting = list(self._threads)
        # A start under way ends first (and, seeing the registry closed, removes what it
        # made): a process that exits leaves no spare running.
        for thread in starting:
            thread.join(timeout=CLOSE_WAIT_S)
        with self._lock:
            spares = list(self._spares.values())
            self._spares.clear()
            names = sorted(self._names)
            self._names.clear()
            runtime = self._runtime
        for spare in spares:
            self._discard(spare)
        if runtime is None:
            return
        for name in names:
            with contextlib.suppress(RuntimeUnavailable):
                runtime.images.remove(name)  # the name: an image still in use stays


_REGISTRIES: dict[tuple[str, tuple[tuple[str, str], ...]], SpareVerifiers] = {}
_REGISTRIES_LOCK = threading.Lock()


def spares_for(
    where: str, labels: Mapping[str, str], connect: Callable[[], SpareRuntime]
) -> SpareVerifiers:
    """The process's one registry of spares for the daemon at ``where`` and ``labels``."""
    key = (where, tuple(sorted(labels.items())))
    with _REGISTRIES_LOCK:
        found = _REGISTRIES.get(key)
        if found is None or found.closed:
            found = _REGISTRIES[key] = SpareVerifiers(connect)
        return found
