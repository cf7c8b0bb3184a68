"""The healthcheck wait follows Harbor's rules: start period, interval, retries."""

from __future__ import annotations

from cleanroom.verifiers.container.run.healthcheck import Attempt, wait_healthy
from cleanroom.verifiers.container.task import HealthcheckConfig


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _results(*passed: bool) -> tuple[list[float], object]:
    timeouts: list[float] = []
    queue = list(passed)

    def attempt(timeout: float) -> Attempt:
        timeouts.append(timeout)
        return Attempt(queue.pop(0), note="exit 1")

    return timeouts, attempt


def test_it_passes_at_the_first_success_and_gives_each_attempt_its_timeout() -> None:
    t = FakeTime()
    timeouts, attempt = _results(False, True)
    check = HealthcheckConfig(command="true", interval_sec=2, timeout_sec=7, retries=3)
    health = wait_healthy(check, attempt, t.clock, t.sleep)  # type: ignore[arg-type]
    assert health.healthy and health.attempts == 2
    assert timeouts == [7, 7]
    assert t.sleeps == [2]


def test_it_gives_up_after_retries_consecutive_failures() -> None:
    t = FakeTime()
    _, attempt = _results(False, False, False, True)
    check = HealthcheckConfig(command="false", interval_sec=1, retries=3)
    health = wait_healthy(check, attempt, t.clock, t.sleep)  # type: ignore[arg-type]
    assert not health.healthy and health.attempts == 3
    assert "exit 1" in health.describe("false")


def test_failures_in_the_start_period_do_not_count() -> None:
    t = FakeTime()
    # Five failures fit in the 10 s start period (2 s apart), then one more counts.
    _, attempt = _results(False, False, False, False, False, False, True)
    check = HealthcheckConfig(
        command="x", start_period_sec=10, start_interval_sec=2, interval_sec=5, retries=2
    )
    health = wait_healthy(check, attempt, t.clock, t.sleep)  # type: ignore[arg-type]
    assert health.healthy and health.attempts == 7
    assert t.sleeps == [2, 2, 2, 2, 2, 5]
