"""Applying the token sweep's findings to a stored window: which rollouts become invalid,
and which are scored 0 for their own act."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.sweep import HOME, Finding, Place
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


def _cross(token: Token, to_env: str) -> Finding:
    home = Place(f"/homes/{to_env}", (to_env,), HOME)
    return Finding(token, f"/homes/{to_env}/x.txt", home, to_env)


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
        invalidated = apply_sweep(store, 1, [_cross(trials, "env02")])
        statuses = {r.outcome for r in store.rollouts(1)}
    assert invalidated == 2 and statuses == {Status.INVALID}


def test_no_finding_invalidates_nothing(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store:
        _window(store)
        assert apply_sweep(store, 1, []) == 0
        assert {r.outcome for r in store.rollouts(1)} == {Status.SUCCESS}


def test_an_own_act_scores_a_finished_rollout_0_with_its_reason(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store:
        tokens = _window(store)
        early = tokens["early"].rollout_id
        changed = store.mark_agent_fault([early], Reason.FORGED_TOKEN, "token_sweep: forged")
        after = {r.rollout_id: (r.outcome, r.reason, r.score) for r in store.rollouts(1)}
    assert changed == 1
    assert after[early] == (Status.FAILURE, Reason.FORGED_TOKEN, 0.0)
    assert after[tokens["late"].rollout_id] == (Status.SUCCESS, None, 1.0)


def test_an_own_act_keeps_the_first_reason_and_never_undoes_an_exclusion(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store:
        tokens = _window(store)
        early, late = tokens["early"].rollout_id, tokens["late"].rollout_id
        store.mark_agent_fault([early], Reason.SELECTION_UNANSWERED, "first")
        store.mark_invalid([late], Reason.ISOLATION, "a real leak")
        assert store.mark_agent_fault([early, late], Reason.FORGED_TOKEN, "second") == 0
        after = {r.rollout_id: (r.outcome, r.reason) for r in store.rollouts(1)}
    assert after == {
        early: (Status.FAILURE, Reason.SELECTION_UNANSWERED),
        late: (Status.INVALID, Reason.ISOLATION),
    }


def test_only_an_agents_reason_scores_an_own_act(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store, pytest.raises(ValueError):
        store.mark_agent_fault(["env01-w001-r0001"], Reason.ISOLATION, "not the agent's")
