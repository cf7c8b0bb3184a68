"""The audit lists exactly the cross-environment submissions of one window."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from cleanroom.verify_server.client import Lease, VerifyClient


def submit(http: httpx.Client, lease: Lease, text: str) -> None:
    assert http.post(f"/v1/form/{lease.lease_id}", data={"token": text}).status_code == 200


def test_one_cross_delivered_token_is_the_only_audit_row(
    http: httpx.Client, client: VerifyClient, new_lease: Callable[..., Lease]
) -> None:
    window = 71
    env01 = new_lease(env="env01", window=window)
    env02 = new_lease(env="env02", window=window)
    env03 = new_lease(env="env03", window=window)
    other_window = new_lease(env="env01", window=window + 1)
    victim_elsewhere = new_lease(env="env02", window=window + 1)

    submit(http, env01, env01.token)  # honest
    submit(http, env02, env02.token)  # honest
    submit(http, env03, "no token at all")  # honest, and wrong
    submit(http, env01, env02.token)  # the one cross delivery in this window
    submit(http, other_window, victim_elsewhere.token)  # cross, but another window

    audit = client.audit(window)
    assert audit.window == window
    assert audit.cross == 1
    [row] = audit.rows
    assert (row.token, row.token_env, row.attributed_env) == (env02.token, "env02", "env01")
    assert (row.lease_id, row.rollout_id, row.window) == (env01.lease_id, env01.rollout_id, window)
    assert row.submitted_at.endswith("Z")


def test_a_window_with_only_honest_rows_has_an_empty_audit(
    http: httpx.Client, client: VerifyClient, new_lease: Callable[..., Lease]
) -> None:
    window = 73
    lease = new_lease(env="env05", window=window)
    submit(http, lease, lease.token)
    audit = client.audit(window)
    assert (audit.rows, audit.cross) == ((), 0)


def test_a_window_nobody_used_has_an_empty_audit(client: VerifyClient) -> None:
    audit = client.audit(999_999)
    assert (audit.window, audit.rows, audit.cross) == (999_999, (), 0)
