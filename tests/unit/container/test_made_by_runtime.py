"""What a runtime made is known to it until removed, and nothing more is made once it stops."""

from __future__ import annotations

import threading

import pytest

from cleanroom.verifiers.container.runtime.docker.made import MadeByRuntime
from cleanroom.verifiers.container.runtime.records import RuntimeUnavailable


def test_what_was_removed_or_thawed_is_not_left_over() -> None:
    made = MadeByRuntime()
    for ident in ("a", "b", "c"):
        made.container(ident)
    made.network("n1")
    made.network("n2")
    made.froze("b")
    made.froze("theirs")
    made.removed_container("a")
    made.removed_network("n1")
    made.thawed("theirs")

    left = made.stop(1)

    assert (left.containers, left.networks, left.frozen) == (("b", "c"), ("n2",), ("b",))


def test_nothing_is_made_once_stopping() -> None:
    made = MadeByRuntime()
    made.stop(1)

    with pytest.raises(RuntimeUnavailable, match="stopping"), made.making("starting x"):
        pass


def test_the_stop_waits_for_a_container_being_started() -> None:
    # Given a start under way when the stop comes
    made = MadeByRuntime()
    inside, release = threading.Event(), threading.Event()

    def start() -> None:
        with made.making("starting x"):
            inside.set()
            release.wait(5)
            made.container("late")

    thread = threading.Thread(target=start)
    thread.start()
    inside.wait(5)
    threading.Timer(0.2, release.set).start()

    left = made.stop(5)

    thread.join()
    assert left.containers == ("late",)
