"""A flood of submissions through one lease stops at its budget: a clear 4xx, the
overrun recorded once as the lease's, nothing more stored, other leases untouched."""

from __future__ import annotations

from pathlib import Path

import httpx
from starlette.testclient import TestClient

from cleanroom.core.tokens import mint
from cleanroom.store.submissions import SubmissionStore
from cleanroom.verify_server.app import create_app
from cleanroom.verify_server.budget import MAX_SUBMITTED_BYTES_PER_LEASE, LeaseBudget
from cleanroom.verify_server.limits import MAX_BODY_BYTES
from cleanroom.verify_server.process import VerifyServerProcess

KEY = "k" * 32
KEYED = {"Authorization": f"Bearer {KEY}"}


def _lease(http: TestClient | httpx.Client, rollout: str, headers: dict[str, str]) -> str:
    tok = str(mint(rollout))
    body = {"env": tok[:5], "rollout_id": tok[:16], "token": tok, "window": 1, "ttl_s": 600}
    response = http.post("/v1/leases", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["lease_id"])


def test_past_the_count_the_form_is_429_and_the_overrun_is_recorded_once(
    tmp_path: Path,
) -> None:
    store = SubmissionStore.open(tmp_path / "submissions.db")
    try:
        app = create_app(store, KEY, lease_budget=LeaseBudget(submissions=3, nbytes=10**6))
        with TestClient(app) as http:
            flooded = _lease(http, "env01-w001-r0001", KEYED)
            other = _lease(http, "env02-w001-r0002", KEYED)
            codes = [
                http.post(f"/v1/form/{flooded}", data={"token": f"x{n}"}).status_code
                for n in range(6)
            ]
            refused = http.post(f"/v1/form/{flooded}", data={"token": "more"})
            kept = http.post(f"/v1/form/{other}", data={"token": "mine"})
        assert codes == [200, 200, 200, 429, 429, 429]
        assert refused.status_code == 429
        assert refused.json()["budget"] == "count"
        assert kept.status_code == 200
        assert len(store.submissions(flooded)) == 3
        [overrun] = store.overruns(1)
        assert (overrun.lease_id, overrun.env, overrun.kind) == (flooded, "env01", "count")
    finally:
        store.close()


def test_a_restarted_server_keeps_counting_a_lease_from_its_stored_rows(
    tmp_path: Path,
) -> None:
    db = tmp_path / "submissions.db"
    budget = LeaseBudget(submissions=2, nbytes=10**6)
    store = SubmissionStore.open(db)
    try:
        with TestClient(create_app(store, KEY, lease_budget=budget)) as http:
            lease = _lease(http, "env01-w001-r0001", KEYED)
            assert http.post(f"/v1/form/{lease}", data={"token": "a"}).status_code == 200
            assert http.post(f"/v1/form/{lease}", data={"token": "b"}).status_code == 200
        with TestClient(create_app(store, KEY, lease_budget=budget)) as http:
            assert http.post(f"/v1/form/{lease}", data={"token": "c"}).status_code == 429
    finally:
        store.close()


def test_a_real_server_flooded_with_big_bodies_stores_no_more_than_the_byte_budget(
    tmp_path: Path,
) -> None:
    body = {"token": "z" * (MAX_BODY_BYTES - 100)}
    flood = MAX_SUBMITTED_BYTES_PER_LEASE // (MAX_BODY_BYTES - 100) + 5
    with VerifyServerProcess.start(tmp_path / "server") as server:
        headers = {"Authorization": f"Bearer {server.key}"}
        with httpx.Client(base_url=server.url, timeout=10.0, trust_env=False) as http:
            lease = _lease(http, "env01-w001-r0001", headers)
            other = _lease(http, "env02-w001-r0002", headers)
            codes = [http.post(f"/v1/form/{lease}", data=body).status_code for _ in range(flood)]
            assert http.post(f"/v1/form/{other}", data={"token": "mine"}).status_code == 200
        with SubmissionStore.open_read_only(server.db) as db:
            count, nbytes = db.spent(lease)
            [overrun] = db.overruns(1)
    assert codes.count(413) >= 5
    assert codes[-1] == 413
    assert nbytes <= MAX_SUBMITTED_BYTES_PER_LEASE
    assert count == codes.count(200)
    assert overrun.kind == "bytes"


def test_the_windows_audit_names_the_lease_that_overran(tmp_path: Path) -> None:
    with VerifyServerProcess.start(tmp_path / "server") as server:
        headers = {"Authorization": f"Bearer {server.key}"}
        body = {"token": "z" * (MAX_BODY_BYTES - 100)}
        flood = MAX_SUBMITTED_BYTES_PER_LEASE // (MAX_BODY_BYTES - 100) + 2
        with httpx.Client(base_url=server.url, timeout=10.0, trust_env=False) as http:
            lease = _lease(http, "env01-w001-r0001", headers)
            for _ in range(flood):
                http.post(f"/v1/form/{lease}", data=body)
        with server.client() as client:
            audit = client.audit(1)
    [overrun] = audit.overruns
    assert (overrun.lease_id, overrun.env, overrun.rollout_id, overrun.kind) == (
        lease,
        "env01",
        "env01-w001-r0001",
        "bytes",
    )


def test_a_server_process_takes_its_lease_budget_from_its_command_line(tmp_path: Path) -> None:
    budget = LeaseBudget(submissions=2, nbytes=10**6)
    with VerifyServerProcess.start(tmp_path, lease_budget=budget) as server:
        with server.client() as client:
            lease = client.lease(mint("env01-w001-r0001"), ttl_s=600)
        url = f"{server.url}/v1/form/{lease.lease_id}"
        codes = [httpx.post(url, data={"token": f"t{n}"}).status_code for n in range(3)]

    assert codes == [200, 200, 429]
