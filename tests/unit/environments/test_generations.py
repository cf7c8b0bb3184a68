"""Generations and the action log, as pure bookkeeping."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.core.breakage import Breakage
from cleanroom.core.outcomes import Cause
from cleanroom.environments.errors import StaleGeneration, UnknownEnvironment
from cleanroom.environments.interface import read_action_log
from cleanroom.environments.pool.generations import ActionLog, GenerationBook


def test_a_new_environment_starts_at_generation_zero() -> None:
    assert GenerationBook(["env01"]).current("env01") == 0


def test_the_current_generation_passes_the_check() -> None:
    GenerationBook(["env01"]).check("env01", 0)


def test_an_old_generation_is_refused_with_both_numbers() -> None:
    book = GenerationBook(["env01"])
    book.raise_("env01")
    with pytest.raises(StaleGeneration) as info:
        book.check("env01", 0)
    assert (info.value.aimed, info.value.current) == (0, 1)


def test_a_future_generation_is_refused_too() -> None:
    with pytest.raises(StaleGeneration):
        GenerationBook(["env01"]).check("env01", 5)


def test_an_unknown_environment_is_named_in_the_error() -> None:
    with pytest.raises(UnknownEnvironment, match="env09"):
        GenerationBook(["env01"]).current("env09")


def test_the_action_log_keeps_generation_time_kind_and_outcome(tmp_path: Path) -> None:
    log = ActionLog(tmp_path / "actions.jsonl")
    log.write("env01", 0, 1, "click", "refused-stale")
    log.close()
    [record] = read_action_log(tmp_path / "actions.jsonl")
    assert (record.env, record.generation, record.current, record.kind, record.outcome) == (
        "env01",
        0,
        1,
        "click",
        "refused-stale",
    )
    assert record.at > 0


def test_a_recovery_says_who_broke_the_generation_it_left() -> None:
    book = GenerationBook(["env01"])
    broke = Breakage(Cause.AGENT, "writer is dead")
    book.raise_("env01", broke)
    book.raise_("env01")  # a reset: it breaks nothing
    assert book.left_by("env01", 0) == broke
    assert book.left_by("env01", 1) is None
    with pytest.raises(StaleGeneration) as info:
        book.check("env01", 0)
    assert info.value.left_by == broke and "writer is dead" in str(info.value)
    with pytest.raises(StaleGeneration) as info:
        book.check("env01", 1)
    assert info.value.left_by is None
