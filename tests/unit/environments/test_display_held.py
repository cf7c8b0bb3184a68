"""A harness connection the display left unanswered past its deadline: held by a client
(a server grab: only the environment's programs reach its display) it is the
environment's own act, said as such; a server that stopped answering by itself is the
infrastructure's."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.core.breakage import Evidence, Part, Problem, judge
from cleanroom.core.outcomes import Cause
from cleanroom.environments.errors import DisplayHeld, EnvironmentBroken
from cleanroom.environments.pool.environment import closed_connection
from cleanroom.environments.pool.gate import Gate
from cleanroom.environments.x11.deadline import DisplayUnanswered, StalledServer

HELD = StalledServer(321, "S", 20)  # idle, our request unread: a grab


def _shut(server: StalledServer | None) -> DisplayUnanswered:
    return DisplayUnanswered(":7", 3.0, "input", server)


def test_a_connection_shut_while_a_client_held_the_server_is_the_agents_doing() -> None:
    problem = closed_connection("input", _shut(HELD))
    assert problem.part is Part.DISPLAY_HELD
    broken = judge(Evidence((problem,)))
    assert broken is not None and broken.cause is Cause.AGENT
    assert broken.why.startswith("a client of its display held the server (a grab)")


@pytest.mark.parametrize("server", [StalledServer(321, "R", 20), StalledServer(321, "T", 20), None])
def test_a_connection_shut_while_the_server_answered_nobody_is_the_infrastructures(
    server: StalledServer | None,
) -> None:
    problem = closed_connection("input", _shut(server))
    assert problem.part is Part.DISPLAY_STALLED
    broken = judge(Evidence((problem,)))
    assert broken is not None and broken.cause is Cause.INFRASTRUCTURE
    assert "stopped answering" in broken.why


def test_a_connection_the_display_closed_stays_a_closed_harness_connection() -> None:
    assert closed_connection("screen", None).part is Part.HARNESS_CONNECTION


def test_a_held_display_is_said_as_itself_not_as_the_connection_its_deadline_shut(
    tmp_path: Path,
) -> None:
    shut = Problem(Part.DISPLAY_HELD, "the harness's input connection was shut")
    gate = Gate(tmp_path, lambda name, injected: Evidence((shut,)))
    gate.add("env01")
    held = DisplayHeld("env01", "input", 321, 20)
    assert gate.failed("env01", 0, "type", held) is held


def test_a_display_that_did_not_answer_without_a_grab_stays_what_broke(tmp_path: Path) -> None:
    dead = Problem(Part.DISPLAY_STALLED, "its display's server stopped answering")
    gate = Gate(tmp_path, lambda name, injected: Evidence((dead,)))
    gate.add("env01")
    failed = gate.failed("env01", 0, "type", _shut(StalledServer(321, "R", 20)))
    assert isinstance(failed, EnvironmentBroken)
    assert failed.breakage.cause is Cause.INFRASTRUCTURE
