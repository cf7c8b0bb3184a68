"""A stop signal ends the loop once; signals during the clean-up are ignored."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from cleanroom.harness.stopping import StopRequested, stop_on_signals


def test_sigterm_raises_a_stop_that_no_except_exception_swallows() -> None:
    stopping = threading.Event()
    with pytest.raises(StopRequested) as caught, stop_on_signals(stopping):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            threading.Event().wait(5)
        except Exception:  # the way a trial turns faults into lost rows
            pytest.fail("a stop signal must not be caught as a fault")
    assert stopping.is_set()
    assert caught.value.exit_code == 143


def test_a_second_signal_during_the_clean_up_is_ignored() -> None:
    stopping = threading.Event()
    with pytest.raises(StopRequested), stop_on_signals(stopping):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            threading.Event().wait(5)
        finally:
            os.kill(os.getpid(), signal.SIGINT)  # ignored: the clean-up goes on
            threading.Event().wait(0.1)


def test_the_previous_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGINT)
    with stop_on_signals(threading.Event()):
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before
