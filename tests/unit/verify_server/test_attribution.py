"""Attribution is decided by the lease and the tokens inside the text, nothing else."""

from __future__ import annotations

from cleanroom.store.submissions import LeaseRecord
from cleanroom.verify_server.attribution import attribute

LEASE = LeaseRecord(
    lease_id="L" * 32,
    env="env01",
    rollout_id="env01-w002-r0003",
    token="env01-w002-r0003-0123abcd",
    window=2,
    created_at=100.0,
    expires_at=200.0,
)


def test_the_lease_supplies_env_rollout_and_window() -> None:
    new = attribute(LEASE, b"env=env02&window=9", 150.0)
    assert (new.env, new.rollout_id, new.window, new.lease_id, new.submitted_at) == (
        "env01",
        "env01-w002-r0003",
        2,
        LEASE.lease_id,
        150.0,
    )


def test_the_rollouts_own_token_is_not_cross() -> None:
    new = attribute(LEASE, LEASE.token.encode(), 150.0)
    assert new.found_tokens == (LEASE.token,)
    assert new.found_envs == ("env01",)
    assert new.cross is False


def test_a_token_of_another_env_makes_the_submission_cross() -> None:
    new = attribute(LEASE, b"env02-w002-r0001-deadbeef", 150.0)
    assert new.found_envs == ("env02",)
    assert new.cross is True


def test_text_without_tokens_is_not_cross() -> None:
    new = attribute(LEASE, b"hello \x00 world", 150.0)
    assert (new.found_tokens, new.found_envs, new.cross) == ((), (), False)


def test_the_body_is_kept_unchanged() -> None:
    body = "\u202e\x00'; --".encode()
    assert attribute(LEASE, body, 150.0).body == body
