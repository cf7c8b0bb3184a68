"""cleanroom's verl reward function in a Python without verl: verl's reward workers import
it by path, and it needs nothing of verl's; the agent-loop hook, which writes verl's own
output, says which extra brings verl. An outcome handed over is used as it is."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cleanroom.core.errors import ExtraNotInstalledError, InvalidOutcomeError
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.integrations.verl_reward import (
    OUTCOME_KEY,
    compute_score,
    record_outcome,
    reward_of,
)

TAMPERED = Outcome(Status.FAILURE, 0.0, Reason.TAMPER, "planted /logs/verifier/reward.txt")
LOST = Outcome(Status.INVALID, None, Reason.VERIFIER_UNAVAILABLE, "no such container")


def test_importing_the_reward_function_imports_no_verl() -> None:
    code = (
        "import sys, cleanroom.integrations.verl_reward; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'verl'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_handed_over_outcome_is_scored_without_verifying_again() -> None:
    extra_info = {OUTCOME_KEY: json.dumps(TAMPERED.to_json())}  # no container named
    assert compute_score("fix-median", "", None, extra_info) == reward_of(TAMPERED)
    assert reward_of(TAMPERED)["score"] == 0.0


def test_a_handed_over_invalid_outcome_raises_never_a_zero() -> None:
    with pytest.raises(InvalidOutcomeError) as raised:
        compute_score("fix-median", "", None, {OUTCOME_KEY: LOST.to_json()})
    assert raised.value.outcome.reason is Reason.VERIFIER_UNAVAILABLE


def test_a_sample_that_names_no_container_is_refused_with_the_keys_it_needs() -> None:
    with pytest.raises(ValueError, match=r'extra_info\["cleanroom"\]'):
        compute_score("fix-median", "", None, {"index": 3})


def test_the_agent_loop_hook_names_the_extra_when_verl_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "verl", None)
    with pytest.raises(ExtraNotInstalledError, match=r"cleanroom\[verl\]"):
        record_outcome(object(), TAMPERED)
