"""One table of smoke tasks: the harness and the ``rollout`` command build tasks from it,
and only a task that uses the verify server asks for a client."""

from __future__ import annotations

from typing import Any, cast

import pytest
from typer.testing import CliRunner

from cleanroom.cli import app
from cleanroom.rollouts.registry import TASKS, make_smoke_task
from cleanroom.verify_server.client import VerifyClient


def test_each_name_builds_its_task_and_only_the_form_task_asks_for_a_verify_client() -> None:
    client = cast(VerifyClient, object())
    asked: list[str] = []

    def supplier_for(name: str) -> Any:
        def supply() -> VerifyClient:
            asked.append(name)
            return client

        return supply

    built = {name: make_smoke_task(name, supplier_for(name)) for name in TASKS}
    assert {name: task.name for name, task in built.items()} == {n: n for n in TASKS}
    assert asked == ["form"]
    assert built["form"].verify_client is client  # type: ignore[attr-defined]


def test_an_unknown_task_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="rename, writer, form"):
        make_smoke_task("paint", lambda: cast(VerifyClient, object()))


def test_the_rollout_command_offers_the_tables_tasks() -> None:
    result = CliRunner().invoke(app, ["rollout", "--task", "paint"])
    assert result.exit_code == 2
    assert ", ".join(TASKS) in " ".join(result.output.split())
