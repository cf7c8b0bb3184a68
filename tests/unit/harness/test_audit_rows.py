"""The verify server's audit becomes isolation rows and names the rollouts to distrust."""

from __future__ import annotations

from pathlib import Path

from cleanroom.core.isolation import RowResult
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.harness.form_audit_rows import (
    CrossSubmission,
    LeasedRollout,
    audit_rows,
    named_rollouts,
    split_forged,
)
from cleanroom.harness.form_audit_window import invalidate_named, score_forged, score_overruns
from cleanroom.store.rundb import RunStore
from cleanroom.verify_server.client import AuditOverrun

LEASED = [
    LeasedRollout("env01", "env01-w001-r0001"),
    LeasedRollout("env02", "env02-w001-r0002"),
    LeasedRollout("env03", "env03-w001-r0003"),
]
LEAK = CrossSubmission("env02-w001-r0002-0badf00d", "env02", "env01", "env01-w001-r0001")


def test_a_clean_audit_gives_a_clean_row_for_every_ordered_pair() -> None:
    rows = audit_rows(1, LEASED, [])
    assert len(rows) == 6
    assert {r.result for r in rows} == {RowResult.CLEAN}


def test_one_cross_delivered_token_gives_exactly_one_cross_row() -> None:
    rows = audit_rows(1, LEASED, [LEAK])
    assert [(r.from_env, r.to_env) for r in rows if r.result is RowResult.CROSS] == [
        ("env02", "env01")
    ]
    assert len(rows) == 6


def test_a_cross_row_names_the_tokens_rollout_and_the_leases_rollout() -> None:
    assert named_rollouts([LEAK]) == {"env02-w001-r0002", "env01-w001-r0001"}


def test_environments_without_a_lease_are_checked_as_senders_into_every_lease() -> None:
    rows = audit_rows(4, [LeasedRollout("env03", "env03-w004-r0001")], [], ["env01", "env02"])
    assert {(r.from_env, r.to_env) for r in rows} == {("env01", "env03"), ("env02", "env03")}
    assert {r.result for r in rows} == {RowResult.CLEAN}


def test_only_a_minted_token_makes_the_rollouts_it_names_invalid(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store:
        store.open_window(1)
        sender, taker = mint(RolloutId("env02", 1, 2)), mint(RolloutId("env01", 1, 1))
        for token in (sender, taker):
            store.start_rollout(token, "form")
            store.finish_rollout(token.rollout_id, Outcome.failure(0.0))
        # env01 typed an env02-shaped token into its own form: nobody minted it.
        forged = CrossSubmission(str(mint(sender.rollout)), "env02", "env01", taker.rollout_id)
        assert invalidate_named(store, [forged]) == 0
        real = CrossSubmission(str(sender), "env02", "env01", taker.rollout_id)
        assert invalidate_named(store, [real]) == 2
        assert {r.reason for r in store.rollouts(1)} == {Reason.ISOLATION}


def test_a_forged_submitted_token_is_no_row_and_scores_its_submitter_0(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store:
        store.open_window(1)
        sender, taker = mint(RolloutId("env02", 1, 2)), mint(RolloutId("env01", 1, 1))
        for token in (sender, taker):
            store.start_rollout(token, "form")
            store.finish_rollout(token.rollout_id, Outcome.success())
        forged = CrossSubmission(str(mint(sender.rollout)), "env02", "env01", taker.rollout_id)
        real, kept = split_forged([forged], {str(sender), str(taker)})
        assert (real, kept) == ([], [forged])
        rows = audit_rows(1, [LeasedRollout("env01", taker.rollout_id)], real, ["env02"])
        assert {r.result for r in rows} == {RowResult.CLEAN}
        assert score_forged(store, kept) == 1
        after = {r.rollout_id: (r.outcome, r.reason) for r in store.rollouts(1)}
    assert after == {
        taker.rollout_id: (Status.FAILURE, Reason.FORGED_TOKEN),
        sender.rollout_id: (Status.SUCCESS, None),
    }


def test_a_real_token_in_another_spelling_is_no_forgery() -> None:
    token = "env02-w001-r0002-0badf00d"
    padded = "env02-w001-r00002-0badf00d"  # the same rollout id, one more zero
    real, forged = split_forged([CrossSubmission(padded, "env02", "env01", "r")], {token})
    assert len(real) == 1 and forged == []


def test_a_lease_that_overran_its_budget_scores_its_rollout_0_and_no_other(
    tmp_path: Path,
) -> None:
    with RunStore.create(tmp_path) as store:
        store.open_window(1)
        flooder, other = mint(RolloutId("env01", 1, 1)), mint(RolloutId("env02", 1, 2))
        for token in (flooder, other):
            store.start_rollout(token, "form")
            store.finish_rollout(token.rollout_id, Outcome.success())
        over = AuditOverrun("lease-1", "env01", str(flooder.rollout_id), "bytes")
        assert score_overruns(store, [over]) == 1
        after = {r.rollout_id: (r.outcome, r.reason) for r in store.rollouts(1)}
    assert after == {
        flooder.rollout_id: (Status.FAILURE, Reason.SUBMISSION_BUDGET),
        other.rollout_id: (Status.SUCCESS, None),
    }
