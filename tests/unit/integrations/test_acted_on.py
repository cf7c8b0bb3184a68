"""The harness-neutral glue around a container another harness started: which outcomes
become a reward and which an exception, the harness's own mount points, and what the
daemon's inspect says was started."""

from __future__ import annotations

import pytest

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.integrations.acted_on import (
    OVERHEAD_S,
    BudgetTooShortError,
    InvalidOutcomeError,
    budget_needed,
    check_budget,
    mount_baseline,
    rewards_of,
)
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
        "Image": "sha256:abc",
        "Mounts": [
            {"Type": "bind", "Source": "/srv/trial/verifier", "Destination": "/logs/verifier"},
            {"Type": "volume", "Source": "/var/lib/docker/volumes/x", "Destination": "/cache"},
            {"Type": "tmpfs", "Destination": "/run/scratch"},
        ],
    }
    started = started_container(attrs)
    assert started.image == "sha256:abc"
    assert started.mounts == {
        "/logs/verifier": "/srv/trial/verifier",
        "/cache": None,
        "/run/scratch": None,
    }


def test_an_inspect_without_an_image_is_the_daemon_s_failure() -> None:
    with pytest.raises(RuntimeUnavailable, match="names no image"):
        started_container({"Mounts": []})


def test_sealed_needs_room_for_the_pristine_control_besides_the_tests() -> None:
    assert budget_needed(60, Mode.SEALED) == 2 * 60 + OVERHEAD_S
    assert budget_needed(60, Mode.CLEARED) == 60 + OVERHEAD_S


def test_a_budget_that_covers_the_verification_passes() -> None:
    check_budget(180, 60, Mode.SEALED, "x {}")
    check_budget(None, 60, Mode.SEALED, "x {}")


def test_a_harness_timeout_under_cleanroom_s_own_limits_is_refused_with_the_fix() -> None:
    how = "run harbor with --verifier-timeout-multiplier {}"
    refused = r"allowed 60 s.*needs up to 180 s.*multiplier 3\.0"
    with pytest.raises(BudgetTooShortError, match=refused):
        check_budget(60, 60, Mode.SEALED, how)
    # The factor applies to the harness's own base when it overrides the task's limit.
    with pytest.raises(BudgetTooShortError, match=r"multiplier 1\.8"):
        check_budget(100, 60, Mode.SEALED, how, base_s=100)
