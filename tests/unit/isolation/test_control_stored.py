"""The positive control is run and stored one way, for the harness and ``cleanroom
control`` alike: evidence beside the database, the result in it; a control that cannot
run stores nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.core.publish import ControlResult
from cleanroom.isolation.controls import positive as control
from cleanroom.isolation.controls.positive import (
    CONTROL_EVIDENCE,
    ControlEvidence,
    run_and_store_control,
)
from cleanroom.store.rundb import RunStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    s = RunStore.create(tmp_path / "run")
    yield s
    s.close()


def test_a_control_that_ran_leaves_its_evidence_and_its_result_in_the_run(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[Path, int, int, int]] = []

    def fake_control(
        run_dir: Path, *, typing_rounds: int, chars: int, clipboard_trials: int
    ) -> tuple[ControlResult, ControlEvidence]:
        asked.append((run_dir, typing_rounds, chars, clipboard_trials))
        evidence = ControlEvidence(typed={"a": "abc"}, typing_runs=[2])
        return ControlResult(2, 2, 0, 5, (5.0,) * 5), evidence

    monkeypatch.setattr(control, "run_control", fake_control)
    result = run_and_store_control(store, typing_rounds=2, chars=30, clipboard_trials=5)
    assert asked == [(store.run_dir, 2, 30, 5)]
    assert not result.fired  # the clipboard half saw nothing: stored as it is
    assert store.control_results() == [result]
    saved = json.loads((store.run_dir / CONTROL_EVIDENCE).read_text())
    assert saved["typed"] == {"a": "abc"} and saved["typing_runs"] == [2]


def test_a_control_that_cannot_run_stores_nothing(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_control(run_dir: Path, **_: int) -> tuple[ControlResult, ControlEvidence]:
        raise TimeoutError("Writer did not save")

    monkeypatch.setattr(control, "run_control", broken_control)
    with pytest.raises(TimeoutError):
        run_and_store_control(store)
    assert store.control_results() == []
    assert not (store.run_dir / CONTROL_EVIDENCE).exists()
