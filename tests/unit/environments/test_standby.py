"""The spare slots of warm standby: a spare is handed over only once it is up and
healthy; one that failed is retired and brought up again, never swapped in; closing
hands every slot back, so nothing is left running."""

from __future__ import annotations

import threading
from typing import Any, cast

from cleanroom.environments.pool.environment import DesktopEnvironment
from cleanroom.environments.pool.standby import Standby


class FakeSlot:
    """Records what the standby did to it; ``fail_start`` makes its bringing up raise."""

    def __init__(self, *, fail_start: bool = False, gate: threading.Event | None = None) -> None:
        self.calls: list[str] = []
        self.fail_start = fail_start
        self.gate = gate
        self.broken: list[str] = []

    def end_processes(self) -> None:
        self.calls.append("end")

    def stop_desktop(self) -> None:
        self.calls.append("stop")

    def restore_home(self) -> None:
        self.calls.append("restore")

    def start_desktop(self) -> None:
        self.calls.append("desktop")

    def start_programs(self) -> None:
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail_start:
            raise RuntimeError("Writer did not start")
        self.calls.append("programs")

    def problems(self) -> list[str]:
        return self.broken

    def destroy(self) -> None:
        self.calls.append("destroy")


def slot(fake: FakeSlot) -> DesktopEnvironment:
    return cast(DesktopEnvironment, cast(Any, fake))


def test_a_spare_that_came_up_is_handed_over_once() -> None:
    standby = Standby()
    fake = FakeSlot()
    standby.bring_up("env01", slot(fake))
    assert standby.take("env01") is slot(fake)
    assert fake.calls == ["stop", "restore", "desktop", "programs"]  # wiped, then started
    assert standby.take("env01") is None  # no longer a spare
    assert standby.close() == []


def test_a_spare_that_failed_is_never_swapped_in_and_is_brought_up_again() -> None:
    standby = Standby()
    fake = FakeSlot(fail_start=True)
    standby.bring_up("env01", slot(fake))
    assert standby.take("env01") is None
    assert standby.failures and "Writer did not start" in standby.failures[0][1]
    assert standby.state("env01") in ("coming up", "failed")  # tried again, not dropped
    assert standby.close() == [slot(fake)]  # handed back to be destroyed


def test_a_spare_whose_programs_died_after_starting_is_not_swapped_in() -> None:
    standby = Standby()
    fake = FakeSlot()
    standby.bring_up("env01", slot(fake))
    assert standby.wait_ready("env01", 10)
    fake.broken = ["writer (pid 7) is dead"]
    assert standby.take("env01") is None
    assert standby.failures == [("env01", "writer (pid 7) is dead")]
    assert standby.close() == [slot(fake)]
    # Retired at once, its processes ended; its display is left to the bring-up (which
    # `close` cancelled here) or to the pool's destroying the slot handed back.
    assert fake.calls[4] == "end", fake.calls


def test_a_spare_still_coming_up_when_the_wait_ends_is_kept_for_the_close() -> None:
    gate = threading.Event()
    standby = Standby()
    fake = FakeSlot(gate=gate)
    standby.bring_up("env01", slot(fake))
    assert standby.take("env01", timeout_s=0.05) is None
    assert standby.state("env01") == "coming up"
    gate.set()
    assert standby.close() == [slot(fake)]  # waited for, then handed back


def test_closing_hands_back_every_slot_and_brings_up_no_more() -> None:
    standby = Standby()
    a, b = FakeSlot(), FakeSlot()
    standby.bring_up("env01", slot(a))
    standby.bring_up("env02", slot(b))
    assert set(map(id, standby.close())) == {id(slot(a)), id(slot(b))}
    late = FakeSlot()
    standby.bring_up("env01", slot(late))  # handed back while the pool stops
    assert late.calls == ["destroy"]
    assert standby.state("env01") == "none"
    assert not standby.wait_ready("env01", 0.01)
