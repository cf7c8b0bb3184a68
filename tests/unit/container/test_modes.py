"""The three modes as plans: sealed is the default, shared only demonstrates attacks."""

from __future__ import annotations

import pytest

from cleanroom.verifiers.container.modes import DEFAULT_MODE, Mode, plan
from cleanroom.verifiers.container.verify import VerifyOptions


def test_sealed_is_the_default() -> None:
    assert DEFAULT_MODE is Mode.SEALED


def test_only_shared_demonstrates_attacks() -> None:
    assert [m for m in Mode if plan(m).demonstrates_attacks] == [Mode.SHARED]


def test_cleared_is_shared_plus_clearing_the_reward() -> None:
    shared, cleared = plan(Mode.SHARED), plan(Mode.CLEARED)

    assert cleared.clears_reward and not shared.clears_reward
    assert cleared.in_agent_container and shared.in_agent_container
    assert not cleared.freezes_agent


def test_sealed_freezes_the_agent_and_verifies_elsewhere() -> None:
    sealed = plan(Mode.SEALED)

    assert sealed.freezes_agent
    assert not (sealed.in_agent_container or sealed.clears_reward)


def test_the_in_container_reader_is_for_shareds_demonstrations_only() -> None:
    VerifyOptions(Mode.SHARED, in_container_reader=True)
    for mode in (Mode.CLEARED, Mode.SEALED):
        with pytest.raises(ValueError, match="demonstrations only"):
            VerifyOptions(mode, in_container_reader=True)
