"""The three modes as plans: sealed is the default, shared is only a positive control."""

from __future__ import annotations

from cleanroom.verifiers.container.modes import DEFAULT_MODE, Mode, plan


def test_sealed_is_the_default() -> None:
    assert DEFAULT_MODE is Mode.SEALED


def test_only_shared_is_a_positive_control() -> None:
    assert [m for m in Mode if plan(m).positive_control] == [Mode.SHARED]


def test_cleared_is_shared_plus_clearing_the_reward() -> None:
    shared, cleared = plan(Mode.SHARED), plan(Mode.CLEARED)

    assert cleared.clears_reward and not shared.clears_reward
    assert cleared.in_agent_container and shared.in_agent_container
    assert not cleared.freezes_agent


def test_sealed_freezes_the_agent_and_verifies_elsewhere() -> None:
    sealed = plan(Mode.SEALED)

    assert sealed.freezes_agent
    assert not (sealed.in_agent_container or sealed.clears_reward)


def test_only_shared_reads_the_reward_with_the_containers_own_programs() -> None:
    assert [m for m in Mode if plan(m).reads_in_container] == [Mode.SHARED]
