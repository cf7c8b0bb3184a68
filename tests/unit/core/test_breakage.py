"""Who broke an environment: the agent's own parts are its 0, the rest are excluded."""

from __future__ import annotations

import pytest

from cleanroom.core.breakage import Breakage, Evidence, MemoryCount, Part, Problem, judge
from cleanroom.core.outcomes import Cause

WRITER_DEAD = Problem(Part.PROGRAM, "writer (pid 7) is dead")
BUS_DEAD = Problem(Part.SESSION_BUS, "session bus is dead")
CONNECTION = Problem(Part.HARNESS_CONNECTION, "the display closed the harness's input connection")
DISPLAY_DEAD = Problem(Part.DISPLAY, "display is dead")
SANDBOX_DEAD = Problem(Part.SANDBOX, "sandbox is dead")
CONTAINER_GONE = Problem(Part.CONTAINER, "its container is not running")
OWN_OOM = MemoryCount(hit_own_limit=True, oom_kills=1)
FOREIGN_OOM = MemoryCount(hit_own_limit=False, oom_kills=2)
QUIET = MemoryCount(hit_own_limit=False, oom_kills=0)


def test_nothing_dead_is_nothing_broken() -> None:
    assert judge(Evidence(())) is None


@pytest.mark.parametrize("problem", [WRITER_DEAD, BUS_DEAD, CONNECTION])
def test_what_only_the_agents_processes_act_on_is_the_agents(problem: Problem) -> None:
    found = judge(Evidence((problem,), env_memory=QUIET))
    assert found is not None and found.cause is Cause.AGENT
    assert problem.detail in found.why


def test_its_own_memory_limit_ending_a_program_is_the_agents() -> None:
    found = judge(Evidence((WRITER_DEAD,), env_memory=OWN_OOM))
    assert found is not None and found.cause is Cause.AGENT


def test_memory_the_environment_did_not_use_is_the_infrastructures() -> None:
    found = judge(Evidence((WRITER_DEAD,), env_memory=FOREIGN_OOM))
    assert found is not None and found.cause is Cause.INFRASTRUCTURE


@pytest.mark.parametrize("problem", [WRITER_DEAD, DISPLAY_DEAD, SANDBOX_DEAD, CONNECTION])
def test_a_fault_the_harness_injected_is_never_the_agents(problem: Problem) -> None:
    found = judge(Evidence((problem,), env_memory=OWN_OOM, injected="a test's kill"))
    assert found is not None and found.cause is Cause.INFRASTRUCTURE
    assert "a test's kill" in found.why


def test_a_dead_display_is_the_infrastructures_without_its_own_oom() -> None:
    for display in (None, QUIET, FOREIGN_OOM):
        found = judge(Evidence((DISPLAY_DEAD, WRITER_DEAD), display_memory=display))
        assert found is not None and found.cause is Cause.INFRASTRUCTURE


def test_a_display_ended_for_the_environments_own_memory_is_the_agents() -> None:
    found = judge(Evidence((DISPLAY_DEAD, WRITER_DEAD), display_memory=OWN_OOM))
    assert found is not None and found.cause is Cause.AGENT


def test_the_display_decides_before_what_it_took_with_it() -> None:
    # The programs die with their display: that they are dead says nothing of the agent.
    found = judge(Evidence((DISPLAY_DEAD, WRITER_DEAD, BUS_DEAD), env_memory=QUIET))
    assert found is not None and found.cause is Cause.INFRASTRUCTURE


@pytest.mark.parametrize("problem", [SANDBOX_DEAD, CONTAINER_GONE])
def test_a_dead_sandbox_or_container_is_the_agents_only_on_its_own_oom(problem: Problem) -> None:
    for memory, killed, cause in [
        (None, False, Cause.INFRASTRUCTURE),
        (QUIET, False, Cause.INFRASTRUCTURE),
        (FOREIGN_OOM, False, Cause.INFRASTRUCTURE),
        (OWN_OOM, False, Cause.AGENT),
        (None, True, Cause.AGENT),
    ]:
        found = judge(
            Evidence((problem, WRITER_DEAD), env_memory=memory, container_oom_killed=killed)
        )
        assert found is not None and found.cause is cause, (memory, killed)


def test_a_breakage_round_trips_and_junk_is_none() -> None:
    record = Breakage(Cause.AGENT, "writer is dead")
    assert Breakage.from_json(record.to_json()) == record
    for junk in (None, "agent", [], {"cause": "nobody"}, {"why": "x"}):
        assert Breakage.from_json(junk) is None
