"""A Deadline shuts the connections it watches when its time runs out, which wakes a
read blocked on them, and leaves them alone when the work ends in time."""

from __future__ import annotations

import socket
import time

import pytest

from cleanroom.environments.errors import DisplayHeld, SelectionHeld, SelectionUnanswered
from cleanroom.environments.x11.deadline import Deadline, StalledServer, deadline


def test_a_read_blocked_past_the_deadline_wakes_with_end_of_file() -> None:
    ours, theirs = socket.socketpair()  # theirs never writes: a server that does not answer
    try:
        started = time.monotonic()
        with deadline(0.2) as limit:
            limit.watch(ours)
            assert ours.recv(1) == b""
        assert limit.expired
        assert time.monotonic() - started < 2.0
    finally:
        ours.close()
        theirs.close()


def test_work_done_in_time_leaves_the_connection_open() -> None:
    ours, theirs = socket.socketpair()
    try:
        with deadline(5.0) as limit:
            limit.watch(ours)
            theirs.sendall(b"x")
            assert ours.recv(1) == b"x"
        assert not limit.expired
        theirs.sendall(b"y")
        assert ours.recv(1) == b"y"
    finally:
        ours.close()
        theirs.close()


def test_a_connection_watched_after_expiry_is_shut_at_once() -> None:
    ours, theirs = socket.socketpair()
    try:
        with deadline(0.01) as limit:
            time.sleep(0.1)
            limit.watch(ours)
            assert ours.recv(1) == b""
    finally:
        ours.close()
        theirs.close()


def test_deadlines_do_not_nest_on_one_thread() -> None:
    with deadline(1.0), pytest.raises(RuntimeError), Deadline(1.0):
        pass


@pytest.mark.parametrize(
    ("state", "unread", "held"),
    [
        ("S", 44, True),  # idle, our request left in its queue: it ignores us (a grab)
        ("S", 0, False),  # idle and read it all: not a grab
        ("R", 44, False),  # busy: slow, not held
        ("T", 44, False),  # stopped
        (None, 44, False),  # its state could not be seen
        ("S", None, False),  # its queue could not be seen
    ],
)
def test_only_an_idle_server_with_our_request_unread_is_held(
    state: str | None, unread: int | None, held: bool
) -> None:
    assert StalledServer(123, state, unread).held is held


def test_a_selection_read_a_grab_held_is_a_held_display_and_a_mute_selection() -> None:
    # Every handler of a mute selection owner (the environment's act) handles a grab too.
    err = SelectionHeld("env01", "CLIPBOARD", 321, 44)
    assert isinstance(err, SelectionUnanswered) and isinstance(err, DisplayHeld)
    assert (err.env, err.selection, err.owner) == ("env01", "CLIPBOARD", 0)
    assert (err.server_pid, err.unread) == (321, 44)
    assert "grab" in str(err)


def test_a_held_display_names_what_went_unanswered_and_the_server() -> None:
    err = DisplayHeld("env01", "a screenshot", 321, 20)
    assert (err.env, err.doing, err.server_pid, err.unread) == ("env01", "a screenshot", 321, 20)
    assert not isinstance(err, SelectionUnanswered)
