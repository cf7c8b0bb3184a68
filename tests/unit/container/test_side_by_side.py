"""The one pool that runs verifications side by side, and the exit code of several."""

from __future__ import annotations

import threading
import time

import pytest

from cleanroom.cli.verify import most_serious_exit
from cleanroom.verifiers.container.side_by_side import side_by_side


def test_results_come_back_in_the_items_order_and_each_is_reported_as_it_ends() -> None:
    ended: list[int] = []

    def slow_first(n: int) -> int:
        time.sleep(0.2 if n == 0 else 0.0)
        return n * 10

    results = side_by_side([0, 1, 2], slow_first, 3, lambda item, _r: ended.append(item))

    assert results == [0, 10, 20]
    assert ended[-1] == 0  # the slow one was reported last, when it ended


def test_no_more_than_workers_run_at_once() -> None:
    running = 0
    most = 0
    lock = threading.Lock()

    def one(_n: int) -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with lock:
            running -= 1

    side_by_side(list(range(8)), one, 2)

    assert most == 2


def test_an_exception_is_raised_and_stops_further_items() -> None:
    started: list[int] = []

    def one(n: int) -> int:
        started.append(n)
        if n == 0:
            raise RuntimeError("broken")
        time.sleep(0.05)
        return n

    with pytest.raises(RuntimeError, match="broken"):
        side_by_side(list(range(20)), one, 1)
    assert len(started) < 20


def test_workers_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        side_by_side([1], lambda n: n, 0)


@pytest.mark.parametrize(
    ("codes", "expected"),
    [([0, 0], 0), ([0, 1], 1), ([1, 3, 0], 3), ([3, 2, 1], 2), ([2], 2), ([], 0)],
)
def test_several_verifications_exit_with_the_most_serious_code(
    codes: list[int], expected: int
) -> None:
    assert most_serious_exit(codes) == expected
