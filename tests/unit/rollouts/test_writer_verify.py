"""The Writer task reads the agent's saved document: what the agent left in its place is
the agent's 0, never a hang of the harness and never an exclusion."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cleanroom.core.outcomes import Status
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.environments.interface import DOCUMENT
from cleanroom.rollouts import writer
from cleanroom.rollouts.base import RolloutContext


def context(home: Path) -> RolloutContext:
    unused: Any = None
    return RolloutContext(
        mint(RolloutId("env01", 1, 1)), "env01", unused, home, lambda env, url: None, lambda: home
    )


@pytest.mark.parametrize(
    "replace",
    [
        os.mkfifo,  # read as root, a FIFO with no writer would block the harness forever
        os.mkdir,
        lambda p: os.symlink("/dev/zero", p),
        lambda p: p.write_bytes(b"not a zip"),
        lambda p: None,  # deleted
    ],
    ids=["fifo", "folder", "device", "junk", "deleted"],
)
def test_what_the_agent_left_in_the_documents_place_is_its_zero(
    tmp_path: Path, replace: Callable[[Path], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "SAVE_TIMEOUT_S", 0.3)
    document = tmp_path / DOCUMENT
    document.parent.mkdir(parents=True)
    replace(document)

    outcome = writer.WriterTask().verify(context(tmp_path))

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0), outcome
    assert outcome.details["broken"]
