"""The poller, the process-group stopper and the child-service wait, with a fake clock
and fake children: no process is started or signalled."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from cleanroom import lifecycle
from cleanroom.lifecycle import ChildService, log_tail, stop_group, wait_until


class FakeClock:
    """A monotonic clock that only moves when the poller sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_the_poller_returns_at_once_when_the_condition_holds() -> None:
    clock = FakeClock()
    assert wait_until(lambda: True, 5.0, 0.5, clock=clock.time, sleep=clock.sleep) is True
    assert clock.sleeps == []


def test_the_poller_gives_up_after_the_timeout_with_one_last_look() -> None:
    clock = FakeClock()
    looks: list[float] = []

    def never() -> bool:
        looks.append(clock.now)
        return False

    assert wait_until(never, 2.0, 0.5, clock=clock.time, sleep=clock.sleep) is False
    assert clock.sleeps == [0.5] * 4
    assert looks == [100.0, 100.5, 101.0, 101.5, 102.0]  # the last one at the deadline


def test_the_poller_waits_until_the_condition_comes() -> None:
    clock = FakeClock()
    assert wait_until(lambda: clock.now >= 101.0, 5.0, 0.25, clock=clock.time, sleep=clock.sleep)
    assert clock.now == 101.0


def test_the_poller_returns_the_value_waited_for_an_empty_text_too() -> None:
    clock = FakeClock()
    answers = iter([None, None, ""])
    found = wait_until(lambda: next(answers), 5.0, 0.1, clock=clock.time, sleep=clock.sleep)
    assert found == ""  # an empty document is an answer, not "not yet"
    assert len(clock.sleeps) == 2


def test_a_check_that_raises_ends_the_wait() -> None:
    clock = FakeClock()

    def exited() -> bool:
        raise RuntimeError("the child exited")

    with pytest.raises(RuntimeError, match="exited"):
        wait_until(exited, 5.0, clock=clock.time, sleep=clock.sleep)
    assert clock.sleeps == []


class FakeChild:
    """A child process that exits on the signals it is told to obey."""

    def __init__(self, pid: int = 4242, *, obeys: tuple[int, ...] = (signal.SIGKILL,)) -> None:
        self.pid = pid
        self.obeys = obeys
        self.returncode: int | None = None
        self.waits: list[float | None] = []

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self.waits.append(timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired("fake", timeout or 0)
        return self.returncode

    def receive(self, sig: int) -> None:
        if sig in self.obeys:
            self.returncode = -sig


class FakeSignals:
    """Where `signal_group` delivers in these tests: to fake children, by pid."""

    def __init__(self) -> None:
        self.children: dict[int, FakeChild] = {}
        self.sent: list[tuple[int, int]] = []

    def add(self, child: FakeChild) -> FakeChild:
        self.children[child.pid] = child
        return child

    def deliver(self, pid: int, sig: int) -> bool:
        self.sent.append((pid, sig))
        self.children[pid].receive(sig)
        return True


@pytest.fixture
def signals(monkeypatch: pytest.MonkeyPatch) -> FakeSignals:
    """Fake children that `signal_group` signals instead of the system's processes."""
    fake = FakeSignals()
    monkeypatch.setattr(lifecycle, "signal_group", fake.deliver)
    return fake


def test_the_stopper_lets_a_child_that_obeys_sigterm_exit_cleanly(
    signals: FakeSignals,
) -> None:
    child = signals.add(FakeChild(7, obeys=(signal.SIGTERM, signal.SIGKILL)))
    stop_group(child, grace_s=5.0)
    assert signals.sent == [(7, signal.SIGTERM)]
    assert child.returncode == -signal.SIGTERM


def test_the_stopper_kills_a_child_that_ignores_sigterm(signals: FakeSignals) -> None:
    child = signals.add(FakeChild(8, obeys=(signal.SIGKILL,)))
    stop_group(child, grace_s=2.0, reap_s=3.0)
    assert signals.sent == [(8, signal.SIGTERM), (8, signal.SIGKILL)]
    assert child.waits == [2.0, 3.0]  # the grace period, then the reap
    assert child.returncode == -signal.SIGKILL


def test_the_stopper_with_no_grace_kills_at_once(signals: FakeSignals) -> None:
    child = signals.add(FakeChild(9, obeys=(signal.SIGTERM, signal.SIGKILL)))
    stop_group(child, grace_s=0.0)
    assert signals.sent == [(9, signal.SIGKILL)]


def test_the_stopper_leaves_an_ended_child_alone(signals: FakeSignals) -> None:
    child = signals.add(FakeChild(10))
    child.returncode = 0
    stop_group(child)
    assert signals.sent == []


def test_the_group_signal_goes_to_the_group_only_when_the_pid_leads_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[tuple[str, int, int]] = []
    groups = {20: 20, 21: 1}  # 20 leads its group; 21 is in someone else's
    monkeypatch.setattr(lifecycle.os, "getpgid", lambda pid: groups[pid])
    monkeypatch.setattr(lifecycle.os, "killpg", lambda pid, sig: sent.append(("group", pid, sig)))
    monkeypatch.setattr(lifecycle.os, "kill", lambda pid, sig: sent.append(("pid", pid, sig)))
    assert lifecycle.signal_group(20, signal.SIGTERM) and lifecycle.signal_group(21, 9)
    assert sent == [("group", 20, signal.SIGTERM), ("pid", 21, 9)]


def test_a_child_that_exits_while_starting_is_reported_with_its_log(
    tmp_path: Path, signals: FakeSignals
) -> None:
    log = tmp_path / "service.log"
    log.write_text("starting\nerror: the port is taken\n")
    child = signals.add(FakeChild(30))
    child.returncode = 2
    service = ChildService(child, log, "the service")
    with pytest.raises(RuntimeError, match=r"(?s)the service exited with 2: .*the port is taken"):
        service.wait_ready(lambda: None, 5.0, RuntimeError)


def test_a_child_that_is_not_ready_in_time_is_stopped(tmp_path: Path, signals: FakeSignals) -> None:
    child = signals.add(FakeChild(31, obeys=(signal.SIGTERM,)))
    service = ChildService(child, tmp_path / "none.log", "the service")
    with pytest.raises(RuntimeError, match=r"not ready after 0\.05 s: \(no log at none\.log\)"):
        service.wait_ready(lambda: None, 0.05, RuntimeError, poll_s=0.01)
    assert signals.sent == [(31, signal.SIGTERM)]


def test_the_ready_answer_is_returned(tmp_path: Path, signals: FakeSignals) -> None:
    child = signals.add(FakeChild(32))
    service = ChildService(child, tmp_path / "x.log", "the service")
    assert service.wait_ready(lambda: "http://127.0.0.1:1234", 1.0, RuntimeError) == (
        "http://127.0.0.1:1234"
    )
    assert signals.sent == []


def test_the_log_tail_is_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("".join(f"line {n}\n" for n in range(40)))
    assert log_tail(log, 2) == "line 38\nline 39"
