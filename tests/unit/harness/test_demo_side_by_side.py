"""The demo's two late steps run side by side, and neither's work is lost if the other fails."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from cleanroom.harness.demo import _side_by_side


def test_the_step_beside_is_waited_for_even_when_the_main_step_raises() -> None:
    done = threading.Event()

    def beside(_s: Any) -> None:
        done.wait(0.05)  # still running when the main step fails
        done.set()

    def step(_s: Any) -> None:
        raise RuntimeError("controls failed")

    with pytest.raises(RuntimeError, match="controls failed"):
        _side_by_side(step, beside)(None)
    assert done.is_set()


def test_what_the_step_beside_raised_is_raised_once_the_main_step_is_done() -> None:
    finished: list[str] = []

    def beside(_s: Any) -> None:
        raise ValueError("red team failed")

    with pytest.raises(ValueError, match="red team failed"):
        _side_by_side(lambda _s: finished.append("controls"), beside)(None)
    assert finished == ["controls"]


def test_both_run_at_once() -> None:
    barrier = threading.Barrier(2, timeout=5)  # breaks unless both wait on it together
    _side_by_side(lambda _s: barrier.wait(), lambda _s: barrier.wait())(None)
