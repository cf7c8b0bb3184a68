"""Reading back the outcomes SealedVerifier recorded in Harbor's trial folders: only the
top level of each trial folder counts, whatever the agent left below it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.integrations.harbor_trials import tally_trials, trial_outcomes


def _record(folder: Path, outcome: Outcome, name: str = "cleanroom-outcome.json") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(outcome.to_json()))


def test_each_trial_s_outcomes_are_counted_by_cause_and_reason(tmp_path: Path) -> None:
    _record(tmp_path / "fix-median__a", Outcome.success())
    _record(tmp_path / "fix-median__b", Outcome.agent_fault(Reason.TAMPER, "planted"))
    _record(tmp_path / "fix-median__c", Outcome.invalid(Reason.BAD_REWARD, "nan"))
    _record(tmp_path / "two-step__d", Outcome.failure(), "cleanroom-outcome.build.json")
    _record(tmp_path / "two-step__d", Outcome.success(), "cleanroom-outcome.report.json")
    metrics = tally_trials(tmp_path).as_metrics()
    assert metrics["cleanroom/scored"] == 4
    assert metrics["cleanroom/agent_caused/tamper"] == 1
    assert metrics["cleanroom/excluded/bad_reward"] == 1


def test_an_outcome_the_agent_wrote_below_a_trial_folder_is_never_read(tmp_path: Path) -> None:
    trial = tmp_path / "fix-median__a"
    _record(trial, Outcome.agent_fault(Reason.TAMPER, "planted"))
    # /logs/agent and /logs/verifier are bound from these folders.
    _record(trial / "agent", Outcome.success())
    _record(trial / "verifier", Outcome.success())
    found, _ = trial_outcomes(tmp_path)
    assert [r.outcome.reason for r in found] == [Reason.TAMPER]


def test_links_fifos_and_junk_are_named_not_counted(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(Outcome.success().to_json()))
    linked = tmp_path / "trials" / "a"
    linked.mkdir(parents=True)
    (linked / "cleanroom-outcome.json").symlink_to(elsewhere)
    fifo = tmp_path / "trials" / "b"
    fifo.mkdir()
    os.mkfifo(fifo / "cleanroom-outcome.json")
    junk = tmp_path / "trials" / "c"
    junk.mkdir()
    (junk / "cleanroom-outcome.json").write_text('{"outcome": "won"}')
    (tmp_path / "trials" / "d").symlink_to(tmp_path / "trials" / "c")
    found, unreadable = trial_outcomes(tmp_path / "trials")
    assert found == []
    assert [u.trial for u in unreadable] == ["a", "b", "c"]
    assert tally_trials(tmp_path / "trials").total == 0
