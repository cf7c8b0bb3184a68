"""Counting a batch's outcomes: what was scored, what the agent caused (by reason) and
what was excluded for the infrastructure (by reason), every reason always reported."""

from __future__ import annotations

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.core.tally import RewardTally, tally


def test_a_batch_counts_the_agent_s_forging_apart_from_the_infrastructure_s_faults() -> None:
    batch = tally(
        [
            Outcome.success(),
            Outcome.failure(),
            Outcome.agent_fault(Reason.TAMPER, "planted reward.txt"),
            Outcome.agent_fault(Reason.TAMPER, "planted reward.json"),
            Outcome.agent_fault(Reason.RUNNER_CUT_SHORT, "pytest never finished"),
            Outcome.invalid(Reason.VERIFIER_UNAVAILABLE, "the daemon went away"),
        ]
    )
    metrics = batch.as_metrics()
    assert (batch.scored, batch.total) == (5, 6)
    assert metrics["cleanroom/agent_caused"] == 3
    assert metrics["cleanroom/agent_caused/tamper"] == 2
    assert metrics["cleanroom/agent_caused/runner_cut_short"] == 1
    assert metrics["cleanroom/excluded"] == 1
    assert metrics["cleanroom/excluded/verifier_unavailable"] == 1
    assert metrics["cleanroom/excluded_fraction"] == 1 / 6
    assert metrics["cleanroom/failure"] == 4  # the agent's own 0s are failures, scored


def test_every_reason_is_a_series_from_the_first_batch_on() -> None:
    metrics = RewardTally().as_metrics(prefix="train/cleanroom")
    for reason in Reason:
        kind = "agent_caused" if reason.cause.value == "agent" else "excluded"
        assert metrics[f"train/cleanroom/{kind}/{reason.value}"] == 0
    assert metrics["train/cleanroom/excluded_fraction"] == 0


def test_workers_tallies_merge_into_the_run_s() -> None:
    run = tally([Outcome.invalid(Reason.VERIFIER_TIMEOUT, "past 60 s")])
    run.merge(tally([Outcome.agent_fault(Reason.TAMPER, "x"), Outcome.success()]))
    assert (run.success, run.failure, run.total) == (1, 1, 3)
    assert run.excluded[Reason.VERIFIER_TIMEOUT] == 1
    assert run.agent_caused[Reason.TAMPER] == 1
