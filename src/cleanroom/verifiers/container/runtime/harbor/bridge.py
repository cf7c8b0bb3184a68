"""Calls into Harbor's environments, which are asynchronous, from the verification's own
threads, which are not.

A verification runs its steps in worker threads (the verifier's container starts while
the agent's is read); each step that needs an environment hands a coroutine to the event
loop the environments belong to and waits for it, bounded. Harbor's own loop when a
Harbor verifier drives the verification; a loop of the bridge's own otherwise.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from cleanroom.verifiers.container.runtime import RuntimeUnavailable

T = TypeVar("T")

# No single call to an environment may wait longer than this unless it says so.
CALL_LIMIT_S = 600.0
# How often a watched download's size is looked at.
WATCH_EVERY_S = 0.05


class Bridge:
    """The event loop Harbor's environments run on, reached from other threads."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._thread: threading.Thread | None = None
        if loop is None:
            loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=loop.run_forever, name="cleanroom-harbor-loop", daemon=True
            )
            self._thread.start()
        self.loop = loop

    def call(
        self, coro: Coroutine[Any, Any, T], what: str, limit_s: float | None = CALL_LIMIT_S
    ) -> T:
        """``coro``'s result, run on the loop; `RuntimeUnavailable` (no answer) when it
        fails or outlasts ``limit_s``, saying ``what`` was being done."""
        future = self.submit(coro)
        done, _ = concurrent.futures.wait([future], limit_s)
        if not done:
            future.cancel()
            raise RuntimeUnavailable(f"{what}: no answer in {limit_s:g} s")
        return _result(future, what)

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the loop without waiting for it."""
        if self._on_loop():
            coro.close()
            raise RuntimeError("a call to an environment was made on its own event loop")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def watched(
        self,
        coro: Coroutine[Any, Any, Any],
        what: str,
        past_cap: Callable[[], bool],
        on_stop: Callable[[], None],
        limit_s: float = CALL_LIMIT_S,
    ) -> bool:
        """Run ``coro`` (a download) while watching it: False, once it is cancelled and
        ``on_stop`` has removed what it wrote, as soon as ``past_cap`` holds."""
        future = self.submit(coro)
        deadline = time.monotonic() + limit_s
        while not concurrent.futures.wait([future], WATCH_EVERY_S).done:
            if past_cap():
                future.cancel()
                on_stop()
                return False
            if time.monotonic() > deadline:
                future.cancel()
                on_stop()
                raise RuntimeUnavailable(f"{what}: no answer in {limit_s:g} s")
        try:
            _result(future, what)
        except RuntimeUnavailable:
            on_stop()
            raise
        if past_cap():
            on_stop()
            return False
        return True

    def _on_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def close(self) -> None:
        """Stop the bridge's own loop (a loop it was given is its owner's)."""
        if self._thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
            self.loop.close()
            self._thread = None


def outlasted_its_limit(exc: RuntimeUnavailable) -> bool:
    """Whether a command's call failed because the command outlasted the limit it was
    given: a `TimeoutError` from the environment, or Harbor's docker environment's
    ``RuntimeError("Command timed out after N seconds")``."""
    cause = exc.__cause__
    return isinstance(cause, TimeoutError) or (
        isinstance(cause, RuntimeError) and "timed out" in str(cause)
    )


def _result(future: concurrent.futures.Future[T], what: str) -> T:
    """A finished call's result; whatever it raised as `RuntimeUnavailable` (a
    `TimeoutError` of its own included: it is never taken for a wait that ran out)."""
    try:
        return future.result()
    except RuntimeUnavailable:
        raise
    except Exception as exc:
        raise RuntimeUnavailable(_said(what, exc)) from exc


def _said(what: str, exc: BaseException) -> str:
    """What failed, bounded: the start and the end of a long message (Harbor's put the
    command first and the cause last)."""
    message = f"{what}: {type(exc).__name__}: {exc}"
    return message if len(message) <= 1600 else f"{message[:700]} [...] {message[-800:]}"
