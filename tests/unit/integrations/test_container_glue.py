"""The harness-neutral glue around a container another harness started: which outcomes
become a reward and which an exception, the harness's own mount points, and what the
daemon's inspect says was started."""

from __future__ import annotations

import pytest

from cleanroom.core.errors import (
    BudgetTooShortError,
    CleanroomError,
    InvalidOutcomeError,
    VerifierUnavailableError,
)
from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.integrations.budget import OVERHEAD_S, BudgetPlan, budget_needed, plan_budget
from cleanroom.integrations.container import mount_baseline
from cleanroom.integrations.rewards import reward_info, reward_or_none, rewards_of
from cleanroom.verifiers.container.decision.tamper import Change, ChangeKind
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.runtime.docker.containers import started_container


def test_a_valid_outcome_is_its_score() -> None:
    assert rewards_of(Outcome.success(1.0)) == {"reward": 1.0}
    assert rewards_of(Outcome.from_score(0.25)) == {"reward": 0.25}


def test_what_the_agent_caused_is_scored_zero_not_raised() -> None:
    planted = Outcome.agent_fault(Reason.TAMPER, "planted /logs/verifier/reward.txt")
    assert rewards_of(planted) == {"reward": 0.0}


def test_an_invalid_outcome_is_raised_with_its_reason_never_a_zero() -> None:
    invalid = Outcome.invalid(Reason.VERIFIER_UNAVAILABLE, "the daemon went away")
    with pytest.raises(InvalidOutcomeError, match=r"verifier_unavailable.*daemon went away") as e:
        rewards_of(invalid)
    assert e.value.outcome is invalid


def test_an_unanswering_daemon_has_an_exception_of_its_own_name_for_the_retry_policy() -> None:
    # Harbor picks a retry policy by the exception's class name.
    unavailable = Outcome.invalid(Reason.VERIFIER_UNAVAILABLE, "the daemon went away")
    with pytest.raises(VerifierUnavailableError):
        rewards_of(unavailable)
    junk = Outcome.invalid(Reason.BAD_REWARD, "nan")
    with pytest.raises(InvalidOutcomeError) as caught:
        rewards_of(junk)
    assert type(caught.value) is InvalidOutcomeError


def test_only_an_invalid_outcome_makes_the_error() -> None:
    with pytest.raises(ValueError, match="only an invalid outcome"):
        InvalidOutcomeError(Outcome.success())


def test_the_mount_points_and_the_folders_above_them_are_the_harness_s() -> None:
    assert mount_baseline(["/logs/verifier", "/logs/agent/", "/data"]) == (
        Change("/data", ChangeKind.ADDED),
        Change("/logs", ChangeKind.ADDED),
        Change("/logs/agent", ChangeKind.ADDED),
        Change("/logs/verifier", ChangeKind.ADDED),
    )
    assert mount_baseline([]) == ()


def test_inspect_gives_the_image_and_the_host_folders_bound_in() -> None:
    attrs = {
        "Id": "c0ffee",
        "Name": "/trial-main-1",
        "Config": {"Labels": {"com.docker.compose.project": "trial"}},
        "Image": "sha256:abc",
        "Mounts": [
            {"Type": "bind", "Source": "/srv/trial/verifier", "Destination": "/logs/verifier"},
            {"Type": "volume", "Source": "/var/lib/docker/volumes/x", "Destination": "/cache"},
            {"Type": "tmpfs", "Destination": "/run/scratch"},
        ],
    }
    started = started_container(attrs)
    assert started.image == "sha256:abc"
    assert (started.id, started.name) == ("c0ffee", "trial-main-1")
    assert started.labels == {"com.docker.compose.project": "trial"}
    assert started.mounts == {
        "/logs/verifier": "/srv/trial/verifier",
        "/cache": None,
        "/run/scratch": None,
    }


def test_an_inspect_without_an_image_is_the_daemon_s_failure() -> None:
    with pytest.raises(RuntimeUnavailable, match="names no image"):
        started_container({"Mounts": []})


def test_sealed_needs_room_for_the_control_s_whole_limit_after_the_tests() -> None:
    assert budget_needed(60, Mode.SEALED) == 60 + 60 + OVERHEAD_S
    assert budget_needed(60, Mode.CLEARED) == 60 + OVERHEAD_S


HOW = "run harbor with --verifier-timeout-multiplier {}"


def test_a_budget_with_room_for_everything_changes_nothing() -> None:
    assert plan_budget(None, 60, Mode.SEALED, HOW) == BudgetPlan()
    assert plan_budget(180, 60, Mode.SEALED, HOW) == BudgetPlan()
    assert plan_budget(120, 60, Mode.CLEARED, HOW) == BudgetPlan()


def test_harbors_default_budget_runs_the_control_alongside_and_keeps_a_reserve() -> None:
    # Harbor's default: the task's own limit. A tenth of it, at least 10 s, is reserved.
    assert plan_budget(60, 60, Mode.SEALED, HOW) == BudgetPlan(50.0, True)
    assert plan_budget(600, 600, Mode.SEALED, HOW) == BudgetPlan(540.0, True)
    # At most 60 s are reserved, however long the budget.
    assert plan_budget(1200, 1200, Mode.SEALED, HOW) == BudgetPlan(1140.0, True)


def test_a_budget_short_only_of_the_control_keeps_the_task_s_limit() -> None:
    assert plan_budget(120, 60, Mode.SEALED, HOW) == BudgetPlan(None, True)


def test_the_modes_without_a_control_only_shorten_the_tests() -> None:
    assert plan_budget(60, 60, Mode.CLEARED, HOW) == BudgetPlan(50.0, False)


def test_a_budget_that_leaves_no_time_for_the_tests_is_refused_with_the_fix() -> None:
    refused = r"allowed 6 s.*keeps 10 s.*leaves 0 s.*multiplier 0\.3"
    with pytest.raises(BudgetTooShortError, match=refused):
        plan_budget(6, 60, Mode.SEALED, HOW)
    # The factor applies to the harness's own base when it overrides the task's limit.
    with pytest.raises(BudgetTooShortError, match=r"multiplier 1\.5"):
        plan_budget(12, 60, Mode.SEALED, HOW, base_s=10)


def test_the_generic_path_keeps_a_larger_reserve() -> None:
    # Harbor's default budget for a 60 s task: 30 s are kept, the tests get the rest.
    assert plan_budget(60, 60, Mode.SEALED, HOW, min_reserve_s=30) == BudgetPlan(30.0, True)
    # A 20 s budget leaves nothing: the factor named covers the larger reserve too.
    with pytest.raises(BudgetTooShortError, match=r"keeps 30 s.*multiplier 1\.8"):
        plan_budget(20, 20, Mode.SEALED, HOW, min_reserve_s=30)


def test_a_refused_budget_says_the_least_time_that_would_do() -> None:
    with pytest.raises(BudgetTooShortError) as refused:
        plan_budget(6, 60, Mode.SEALED)
    assert (refused.value.allowed_s, refused.value.needed_s) == (6, 15.0)
    assert "times the task's verifier limit" in str(refused.value)


def test_every_exception_cleanroom_raises_on_purpose_has_one_root() -> None:
    invalid = Outcome.invalid(Reason.VERIFIER_TIMEOUT, "ran past 60 s")
    assert isinstance(InvalidOutcomeError(invalid), CleanroomError)
    assert issubclass(BudgetTooShortError, CleanroomError)


def test_a_reward_s_metrics_are_recorded_beside_the_score() -> None:
    scored = Outcome(
        Outcome.success(1.0).status, 1.0, reward_metrics={"reward": 1.0, "tests_passed": 4.0}
    )
    assert rewards_of(scored) == {"reward": 1.0, "tests_passed": 4.0}


def test_a_single_metric_without_the_reward_key_is_recorded_as_the_reward_too() -> None:
    scored = Outcome.from_score(0.5)
    scored = Outcome(scored.status, 0.5, reward_metrics={"accuracy": 0.5})
    assert rewards_of(scored) == {"accuracy": 0.5, "reward": 0.5}


def test_none_is_the_reward_of_an_invalid_outcome_and_zero_stays_zero() -> None:
    assert reward_or_none(Outcome.invalid(Reason.HARNESS_ERROR, "a bug")) is None
    assert reward_or_none(Outcome.agent_fault(Reason.TAMPER, "planted")) == 0.0
    assert reward_or_none(Outcome.failure()) == 0.0


def test_the_logged_info_names_the_reason_and_who_caused_it() -> None:
    info = reward_info(Outcome.agent_fault(Reason.TAMPER, "planted reward.txt"))
    assert info == {
        "outcome": "failure",
        "reason": "tamper",
        "caused_by": "agent",
        "detail": "planted reward.txt",
    }
    assert reward_info(Outcome.success())["reason"] is None


@pytest.mark.parametrize("junk", [0, -5, True, "60", float("nan"), float("inf")])
def test_a_budget_that_is_no_number_of_seconds_above_zero_is_refused(junk: object) -> None:
    with pytest.raises(ValueError, match="a number of seconds above 0"):
        plan_budget(junk, 60, Mode.SEALED)  # type: ignore[arg-type]
