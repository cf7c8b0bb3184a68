"""Verifications on Ray without a cluster: which node verifies a container (from what
each node's daemon answered), what a Ray task's end means for its request, and what is
refused before a cluster is joined."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.core.errors import BudgetTooShortError
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.integrations.ray_verify import (
    ContainerVerification,
    DaemonSeen,
    RayVerification,
    TaskVerification,
    choose_nodes,
    verification_of,
    verify_on_ray,
)
from cleanroom.integrations.rewards import reward_or_none
from cleanroom.ray_cluster.tasks import Failed, Finished, Lost
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions

FIX_MEDIAN = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "fix-median"


def seen(node: str, daemon: str, *holds: str, engine: str = "docker") -> DaemonSeen:
    return DaemonSeen(f"id-{node}", node, engine, daemon, frozenset(holds))


# --- which node verifies a container ----------------------------------------------------


def test_the_node_whose_daemon_holds_the_container_verifies_it() -> None:
    views = [seen("a", "d1"), seen("b", "d2", "trial-1"), seen("c", "d3", "trial-2")]
    assert choose_nodes([("docker", "trial-1"), ("docker", "trial-2")], views) == [
        "id-b",
        "id-c",
    ]


def test_nodes_sharing_one_daemon_take_its_containers_in_turn() -> None:
    # Two Ray nodes of one machine: one daemon, either node can reach the container.
    views = [seen("a", "d1", "t1", "t2", "t3"), seen("b", "d1", "t1", "t2", "t3")]
    wanted = [("docker", "t1"), ("docker", "t2"), ("docker", "t3")]
    assert choose_nodes(wanted, views) == ["id-a", "id-b", "id-a"]


def test_a_container_no_daemon_holds_is_invalid_naming_the_nodes_asked() -> None:
    silent = DaemonSeen("id-c", "c", "docker", error="connecting: Docker daemon not reachable")
    (chosen,) = choose_nodes([("docker", "gone")], [seen("a", "d1"), seen("b", "d2"), silent])
    assert isinstance(chosen, Outcome)
    assert (chosen.status, chosen.reason) == (Status.INVALID, Reason.VERIFIER_UNAVAILABLE)
    assert "no Docker node's docker daemon has container 'gone'" in chosen.detail
    assert "nodes asked: a, b, c" in chosen.detail
    assert "did not answer: c: connecting: Docker daemon not reachable" in chosen.detail
    assert reward_or_none(chosen) is None  # excluded, never a 0


def test_a_container_on_two_different_daemons_is_ambiguous_and_invalid() -> None:
    views = [seen("a", "d1", "trial-1"), seen("b", "d2", "trial-1"), seen("c", "d2", "trial-1")]
    (chosen,) = choose_nodes([("docker", "trial-1")], views)
    assert isinstance(chosen, Outcome)
    assert chosen.reason is Reason.VERIFIER_UNAVAILABLE
    assert "on 2 different docker daemons (nodes a, b, c)" in chosen.detail
    assert chosen.details["nodes"] == ["a", "b", "c"]


def test_a_node_whose_daemon_did_not_answer_does_not_stop_the_one_that_holds_it() -> None:
    silent = DaemonSeen("id-a", "a", "docker", error="not reachable")
    assert choose_nodes([("docker", "trial-1")], [silent, seen("b", "d2", "trial-1")]) == ["id-b"]


def test_each_engine_is_asked_of_its_own_daemons() -> None:
    views = [seen("a", "d1", "trial-1"), seen("a", "p1", engine="podman")]
    docker, podman = choose_nodes([("docker", "trial-1"), ("podman", "trial-1")], views)
    assert docker == "id-a"
    assert isinstance(podman, Outcome)
    assert "podman daemon has container 'trial-1'" in podman.detail


def test_no_docker_node_at_all_is_invalid_not_an_error() -> None:
    (chosen,) = choose_nodes([("docker", "trial-1")], [])
    assert isinstance(chosen, Outcome)
    assert "nodes asked: none" in chosen.detail


# --- what a Ray task's end means ---------------------------------------------------------

REQUEST = TaskVerification(FIX_MEDIAN, AgentSpec.solution())


def test_a_finished_task_is_its_outcome_on_the_node_it_reported() -> None:
    outcome = Outcome.agent_fault(Reason.TAMPER, "planted /logs/verifier/reward.txt")
    end = Finished({"outcome": outcome.to_json(), "node": "host-b/0123456789ab"})
    verified = verification_of(REQUEST, end, None)
    assert verified == RayVerification(REQUEST, outcome, "host-b/0123456789ab")
    assert (verified.outcome.score, verified.outcome.reason) == (0.0, Reason.TAMPER)


def test_a_lost_worker_or_node_is_interrupted_never_a_zero() -> None:
    verified = verification_of(REQUEST, Lost("NodeDiedError: the node died"), "host-b/01")
    assert (verified.outcome.status, verified.outcome.reason) == (
        Status.INVALID,
        Reason.INTERRUPTED,
    )
    assert verified.outcome.score is None and reward_or_none(verified.outcome) is None
    assert "was lost: NodeDiedError: the node died" in verified.outcome.detail
    assert verified.node == "host-b/01"
    assert verified.outcome.details == {"task": str(FIX_MEDIAN), "agent": "solution"}


def test_code_that_raised_on_the_node_is_a_harness_error_with_its_trace() -> None:
    why = "Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module named 'x'"
    verified = verification_of(REQUEST, Failed(why), None)
    assert verified.outcome.reason is Reason.HARNESS_ERROR
    assert verified.outcome.detail.endswith("ModuleNotFoundError: No module named 'x'")
    assert verified.outcome.details["traceback"] == why
    assert verified.node is None


def test_a_task_that_returned_no_outcome_is_a_harness_error() -> None:
    verified = verification_of(REQUEST, Finished({"node": "a"}), "a")
    assert verified.outcome.reason is Reason.HARNESS_ERROR


# --- requests -----------------------------------------------------------------------------


def test_a_request_takes_a_mode_by_name_and_refuses_an_unknown_engine() -> None:
    request = ContainerVerification(str(FIX_MEDIAN), "trial-1", "cleared")  # type: ignore[arg-type]
    assert request.mode is Mode.CLEARED and request.task_dir == FIX_MEDIAN
    cleared = VerifyOptions(Mode.CLEARED)
    assert RayVerification(request, Outcome.success(), "a").mode is Mode.CLEARED
    by_task = TaskVerification(FIX_MEDIAN, AgentSpec.noop(), cleared)
    assert RayVerification(by_task, Outcome.success(), "a").mode is Mode.CLEARED
    with pytest.raises(ValueError, match="choose one of docker, podman"):
        ContainerVerification(FIX_MEDIAN, "trial-1", engine="lxc")
    with pytest.raises(ValueError, match="choose one of docker, podman"):
        TaskVerification(FIX_MEDIAN, AgentSpec.noop(), engine="lxc")


def test_nothing_to_verify_needs_no_cluster() -> None:
    assert verify_on_ray("127.0.0.1:1", []) == []


def test_a_budget_too_short_is_refused_before_any_cluster_is_joined() -> None:
    # Nothing listens at the address: the budget is refused first.
    request = ContainerVerification(FIX_MEDIAN, "trial-1", budget_s=0.5)
    with pytest.raises(BudgetTooShortError):
        verify_on_ray("127.0.0.1:1", [request])
