"""A container verification's keywords are declared once: every entry point that takes
them builds the one record, `ContainerVerification`, from them."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from cleanroom.core.outcomes import Outcome
from cleanroom.integrations import container, verl_reward
from cleanroom.integrations.container import ContainerOptions, ContainerVerification
from cleanroom.verifiers.container.modes import Mode


def test_the_keywords_are_the_records_fields_after_the_container() -> None:
    fields = [f.name for f in dataclasses.fields(ContainerVerification)]
    assert fields[:2] == ["task_dir", "container"]
    assert list(ContainerOptions.__annotations__) == fields[2:]


def test_a_mode_may_be_named_and_the_harness_folders_any_iterable() -> None:
    request = ContainerVerification.of(
        "tasks/fix-median", "trial-1", mode="cleared", harness_dirs=iter(["/logs/agent"])
    )
    assert request == ContainerVerification(
        Path("tasks/fix-median"), "trial-1", Mode.CLEARED, harness_dirs=("/logs/agent",)
    )


def test_an_unknown_engine_is_refused_before_anything_runs() -> None:
    with pytest.raises(ValueError, match="choose one of docker, podman"):
        container.verify_container("tasks/fix-median", "trial-1", engine="lxc")


def _verified(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[ContainerVerification]:
    seen: list[ContainerVerification] = []

    def verify_requested(request: ContainerVerification) -> Outcome:
        seen.append(request)
        return Outcome.success()

    monkeypatch.setattr(module, "verify_requested", verify_requested)
    return seen


def test_the_async_entry_verifies_the_same_record(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _verified(monkeypatch, container)
    asyncio.run(container.verify_container_async("tasks/t", "c", step="two", budget_s=60.0))
    assert seen == [ContainerVerification(Path("tasks/t"), "c", step="two", budget_s=60.0)]


def test_a_verl_sample_gives_the_keywords_it_names_and_no_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _verified(monkeypatch, verl_reward)
    target = {"task_dir": "tasks/t", "container": "c", "engine": "podman", "note": "kept out"}
    verl_reward.compute_score("src", "text", None, {verl_reward.TARGET_KEY: target})
    assert seen == [ContainerVerification(Path("tasks/t"), "c", engine="podman")]
