"""Applying the token sweep's cross rows to a stored window: which rollouts become invalid."""

from __future__ import annotations

from pathlib import Path

from cleanroom.core.isolation import SWEEP_TEST, IsolationRow, RowResult
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.tokens import RolloutId, Token, mint
from cleanroom.isolation.checks.token_sweep import apply_sweep
from cleanroom.store.rundb import RunStore


def _window(store: RunStore) -> dict[str, Token]:
    """Window 1 opened at 100; env01's rollout ran 101-104, env02's 105-110."""
    store.open_window(1, started_at=100.0)
    tokens = {"early": mint(RolloutId("env01", 1, 1)), "late": mint(RolloutId("env02", 1, 2))}
    store.start_rollout(tokens["early"], "writer", started_at=101.0)
    store.finish_rollout(tokens["early"].rollout_id, Outcome.success(), ended_at=104.0)
    store.start_rollout(tokens["late"], "writer", started_at=105.0)
    store.finish_rollout(tokens["late"].rollout_id, Outcome.success(), ended_at=110.0)
    return tokens


def _cross(token: Token, to_env: str) -> IsolationRow:
    detail = f"{token} of {token.env} in {to_env}'s home at /homes/{to_env}/x.txt"
    return IsolationRow(SWEEP_TEST, 0, token.env, to_env, RowResult.CROSS, 1, detail)


def test_a_foreign_token_invalidates_the_rollouts_that_ended_after_it_existed(
    tmp_path: Path,
) -> None:
    with RunStore.create(tmp_path) as store:
        tokens = _window(store)
        # env02's token (its rollout started at 105) found in env01's home.
        invalidated = apply_sweep(store, 1, [_cross(tokens["late"], "env01")])
        outcomes = {r.rollout_id: (r.outcome, r.reason) for r in store.rollouts(1)}
    assert invalidated == 1
    assert outcomes[tokens["early"].rollout_id] == (Status.SUCCESS, None)
    assert outcomes[tokens["late"].rollout_id] == (Status.INVALID, Reason.ISOLATION)


def test_a_trials_token_invalidates_the_whole_window_from_its_start(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store:
        _window(store)
        trials = mint(RolloutId("env03", 1, 50_001))  # minted by a trial of window 1
        invalidated = apply_sweep(store, 1, [_cross(trials, "env02")], minted={str(trials)})
        statuses = {r.outcome for r in store.rollouts(1)}
    assert invalidated == 2 and statuses == {Status.INVALID}


def test_a_token_nobody_minted_never_turns_a_score_into_an_exclusion(tmp_path: Path) -> None:
    # An agent in env02 writes an env01-shaped token into its own home: the row is cross
    # (the window fails), but no rollout escapes its score by being made invalid.
    with RunStore.create(tmp_path) as store:
        tokens = _window(store)
        forged = mint(RolloutId("env01", 1, 1))  # env01's rollout id, not its token
        assert str(forged) != str(tokens["early"])
        invalidated = apply_sweep(store, 1, [_cross(forged, "env02")], minted=set())
        statuses = {r.outcome for r in store.rollouts(1)}
    assert invalidated == 0 and statuses == {Status.SUCCESS}


def test_clean_and_lost_rows_invalidate_nothing(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store:
        _window(store)
        rows = [
            IsolationRow(SWEEP_TEST, 0, "env01", "env02", RowResult.CLEAN, 1),
            IsolationRow(SWEEP_TEST, 0, "env02", "env01", RowResult.LOST, 1, "unreadable"),
        ]
        assert apply_sweep(store, 1, rows) == 0
        assert {r.outcome for r in store.rollouts(1)} == {Status.SUCCESS}
