"""A submission is attributed to its lease's environment, rollout and window: nothing the
request says about itself is believed."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from cleanroom.store.submissions import SubmissionStore
from cleanroom.verify_server.client import Lease, VerifyClient

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def test_extra_fields_claiming_another_env_are_ignored(
    http: httpx.Client, client: VerifyClient, new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease(env="env01", window=3)
    body = (
        f"env=env02&rollout_id=env02-w003-r0001&window=9&lease_id=other&token={lease.token}"
        "&attributed_env=env02"
    )
    assert http.post(f"/v1/form/{lease.lease_id}", content=body, headers=FORM).status_code == 200
    [row] = client.submissions(lease.lease_id)
    assert (row.env, row.rollout_id, row.window) == ("env01", lease.rollout_id, 3)


def test_headers_and_cookies_claiming_another_env_are_ignored(
    http: httpx.Client, db: SubmissionStore, new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease(env="env01")
    headers = {
        **FORM,
        "X-Env": "env02",
        "X-Forwarded-For": "10.0.0.2",
        "Cookie": "env=env02; lease_id=someone-else",
        "Referer": "http://env02.invalid/v1/form/other",
    }
    http.post(f"/v1/form/{lease.lease_id}", content=f"token={lease.token}", headers=headers)
    [stored] = db.submissions(lease.lease_id)
    assert (stored.env, stored.lease_id, stored.rollout_id) == (
        "env01",
        lease.lease_id,
        lease.rollout_id,
    )


def test_submission_records_the_envs_its_tokens_name(
    http: httpx.Client, client: VerifyClient, new_lease: Callable[..., Lease]
) -> None:
    own = new_lease(env="env01")
    other = new_lease(env="env02")
    text = f"mine {own.token} and theirs {other.token}"
    http.post(f"/v1/form/{own.lease_id}", data={"token": text})
    [row] = client.submissions(own.lease_id)
    assert row.found_envs == ("env01", "env02")
    assert row.cross is True


def test_verify_form_succeeds_only_with_the_rollouts_own_token(
    http: httpx.Client, client: VerifyClient, new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease()
    assert client.verify_form(lease).status == "failure"
    wrong_last = "1" if lease.token.endswith("0") else "0"
    http.post(f"/v1/form/{lease.lease_id}", data={"token": lease.token[:-1] + wrong_last})
    assert client.verify_form(lease).status == "failure"
    http.post(f"/v1/form/{lease.lease_id}", data={"token": lease.token})
    outcome = client.verify_form(lease)
    assert outcome.status == "success"
    assert outcome.details["submissions"] == 2
