"""A stop signal ends the loop once (or, with `exit_on_signals`, the process after its
clean-up); signals during the clean-up are ignored."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

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


# A process whose work runs in a thread it cannot interrupt, stopped by a signal: the
# clean-up writes a file (after a second signal, which must not cut it short) and the
# process ends with the signal's status although the work never returns.
EXITING = r"""
import os, signal, sys, threading, time
from cleanroom.harness.stopping import exit_on_signals

def clean_up(name):
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)
    with open(sys.argv[1], "w") as out:
        out.write(name)

with exit_on_signals(clean_up):
    threading.Thread(target=lambda: time.sleep(60)).start()
    print("ready", flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_exit_on_signals_runs_the_clean_up_then_exits_with_the_signals_status(
    tmp_path: Path, sig: signal.Signals, status: int
) -> None:
    marker = tmp_path / "cleaned"
    proc = subprocess.Popen(
        [sys.executable, "-c", EXITING, str(marker)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"

    proc.send_signal(sig)

    assert proc.wait(timeout=20) == status
    assert marker.read_text() == sig.name
