"""Extra labels for everything a process creates come from CLEANROOM_LABELS."""

from __future__ import annotations

import pytest

from cleanroom.verifiers.container.runtime.docker import LABELS_ENV, labels_from_env


def test_pairs_are_read_and_junk_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LABELS_ENV, "cleanroom.test=1, team = red ,novalue,=x")

    assert labels_from_env() == {"cleanroom.test": "1", "team": "red"}


def test_no_variable_means_no_extra_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LABELS_ENV, raising=False)

    assert labels_from_env() == {}
