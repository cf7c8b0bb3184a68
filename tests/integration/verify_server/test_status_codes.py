"""Every status the verify server answers with, each with a JSON error body, and after
every refusal the server still serves and has stored nothing."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from cleanroom.core.tokens import mint
from cleanroom.store.submissions import SubmissionStore
from cleanroom.verify_server.app import create_app
from cleanroom.verify_server.client import Lease
from cleanroom.verify_server.limits import MAX_BODY_BYTES
from cleanroom.verify_server.process import VerifyServerProcess

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def lease_body(**override: object) -> dict[str, object]:
    tok = str(mint("env01-w001-r9999"))
    body: dict[str, object] = {
        "env": tok[:5],
        "rollout_id": tok[:16],
        "token": tok,
        "window": 1,
        "ttl_s": 60,
    }
    body.update(override)
    return body


def assert_json_error(response: httpx.Response, status: int) -> dict[str, object]:
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body["error"], str) and body["error"]
    return body


def test_healthz_answers_ok(http: httpx.Client) -> None:
    response = http.get("/v1/healthz")
    assert response.status_code == 200
    assert response.json() == {"ok": True}


def test_lease_with_the_key_is_created_with_urls_and_expiry(
    http: httpx.Client, key_headers: dict[str, str]
) -> None:
    response = http.post("/v1/leases", json=lease_body(), headers=key_headers)
    assert response.status_code == 201
    body = response.json()
    assert set(body) >= {"lease_id", "form_url", "frames_url", "expires_at"}
    assert body["form_url"].endswith(f"/v1/form/{body['lease_id']}")
    assert body["frames_url"].endswith(f"/v1/frames/{body['lease_id']}")
    assert len(body["lease_id"]) >= 32


def test_lease_ids_are_unguessable_and_distinct(
    http: httpx.Client, key_headers: dict[str, str]
) -> None:
    ids = {
        http.post("/v1/leases", json=lease_body(), headers=key_headers).json()["lease_id"]
        for _ in range(20)
    }
    assert len(ids) == 20


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-key", "Bearer", "Basic Zm9vOmJhcg==", "bearer {key}", "Bearer {key}x"],
)
def test_lease_without_the_right_key_is_401(
    http: httpx.Client,
    server: VerifyServerProcess,
    authorization: str | None,
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    check = nothing_stored()
    headers = (
        {} if authorization is None else {"Authorization": authorization.format(key=server.key)}
    )
    response = http.post("/v1/leases", json=lease_body(), headers=headers)
    assert_json_error(response, 401)
    assert response.headers["www-authenticate"] == "Bearer"
    check()


@pytest.mark.parametrize("path", ["/v1/audit?window=1", "/v1/leases/whatever/submissions"])
def test_harness_reads_without_the_key_are_401(
    http: httpx.Client, path: str, nothing_stored: Callable[[], Callable[[], None]]
) -> None:
    check = nothing_stored()
    assert_json_error(http.get(path), 401)
    check()


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"env": "prod01"}, "env"),
        ({"env": "env02"}, "rollout_id"),
        ({"rollout_id": "env01-w001-r0001"}, "token"),
        ({"token": "env01-w001-r9999-XYZ"}, "token"),
        ({"token": "env02-w001-r9999-0123abcd"}, "token"),
        ({"window": -1}, "window"),
        ({"window": "1"}, "window"),
        ({"window": True}, "window"),
        ({"window": 2}, "window"),
        ({"ttl_s": 0}, "ttl_s"),
        ({"ttl_s": 10**9}, "ttl_s"),
        ({"ttl_s": "60"}, "ttl_s"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_invalid_lease_fields_are_422_naming_the_field(
    http: httpx.Client,
    key_headers: dict[str, str],
    override: dict[str, object],
    field: str,
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    check = nothing_stored()
    response = http.post("/v1/leases", json=lease_body(**override), headers=key_headers)
    assert assert_json_error(response, 422)["field"] == field
    check()


@pytest.mark.parametrize("missing", ["env", "rollout_id", "token", "window", "ttl_s"])
def test_missing_lease_fields_are_422_naming_the_field(
    http: httpx.Client,
    key_headers: dict[str, str],
    missing: str,
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    check = nothing_stored()
    body = lease_body()
    del body[missing]
    response = http.post("/v1/leases", json=body, headers=key_headers)
    assert assert_json_error(response, 422)["field"] == missing
    check()


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\xff\xfe", b""])
def test_malformed_lease_json_is_400(
    http: httpx.Client,
    key_headers: dict[str, str],
    content: bytes,
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    check = nothing_stored()
    response = http.post(
        "/v1/leases", content=content, headers={**key_headers, "Content-Type": "application/json"}
    )
    assert_json_error(response, 400)
    check()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/form/no-such-lease"),
        ("POST", "/v1/form/no-such-lease"),
        ("GET", "/v1/frames/no-such-lease"),
        ("POST", "/v1/frames/no-such-lease"),
        ("GET", "/v1/frames/no-such-lease/count"),
        ("GET", "/v1/leases/no-such-lease/submissions"),
        ("GET", "/v1/no-such-endpoint"),
    ],
)
def test_unknown_lease_or_path_is_404(
    http: httpx.Client,
    key_headers: dict[str, str],
    method: str,
    path: str,
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    check = nothing_stored()
    response = http.request(method, path, content=b"token=x", headers={**key_headers, **FORM})
    assert_json_error(response, 404)
    check()


def test_a_closed_lease_stores_nothing_more_and_only_the_harness_can_close_one(
    http: httpx.Client,
    key_headers: dict[str, str],
    new_lease: Callable[..., Lease],
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    lease = new_lease(ttl_s=600)
    assert_json_error(http.post(f"/v1/leases/{lease.lease_id}/close"), 401)
    assert http.get(f"/v1/form/{lease.lease_id}").status_code == 200  # still open
    closed = http.post(f"/v1/leases/{lease.lease_id}/close", headers=key_headers)
    assert closed.status_code == 200
    check = nothing_stored()
    response = http.post(
        f"/v1/form/{lease.lease_id}", content=b"token=" + lease.token.encode(), headers=FORM
    )
    assert_json_error(response, 410)
    check()
    again = http.post(f"/v1/leases/{lease.lease_id}/close", headers=key_headers)
    assert again.json()["expires_at"] == closed.json()["expires_at"]  # never reopened
    missing = http.post("/v1/leases/no-such-lease/close", headers=key_headers)
    assert_json_error(missing, 404)


class HandClock:
    """A clock that moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_expired_lease_is_410_for_form_and_frames_but_still_readable_by_the_harness(
    tmp_path: Path,
) -> None:
    # The app in process on a clock the test moves: the lease expires when the clock says
    # so, not after a wait on the wall clock.
    clock = HandClock()
    key = "k" * 32
    key_headers = {"Authorization": f"Bearer {key}"}
    store = SubmissionStore.open(tmp_path / "submissions.db")
    try:
        with TestClient(create_app(store, key, clock=clock)) as http:
            created = http.post("/v1/leases", json=lease_body(ttl_s=1), headers=key_headers)
            lease_id, token = created.json()["lease_id"], lease_body()["token"]
            clock.now += 0.9
            assert http.get(f"/v1/form/{lease_id}").status_code == 200  # not expired yet
            clock.now += 0.2
            before = store.totals()
            for method, path in [
                ("GET", f"/v1/form/{lease_id}"),
                ("POST", f"/v1/form/{lease_id}"),
                ("GET", f"/v1/frames/{lease_id}"),
                ("POST", f"/v1/frames/{lease_id}"),
            ]:
                response = http.request(method, path, content=f"token={token}", headers=FORM)
                assert_json_error(response, 410)
            assert http.get("/v1/healthz").json() == {"ok": True}
            assert store.totals() == before
            readable = http.get(f"/v1/leases/{lease_id}/submissions", headers=key_headers)
            assert readable.status_code == 200
            assert readable.json()["submissions"] == []
    finally:
        store.close()


def test_body_over_64_kib_by_content_length_is_413_before_it_is_read(
    raw_http: Callable[[bytes], tuple[int, bytes]],
    new_lease: Callable[..., Lease],
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    lease = new_lease()
    check = nothing_stored()
    # Declares 10 MiB but sends only the headers: the answer must not wait for the body.
    request = (
        f"POST /v1/form/{lease.lease_id} HTTP/1.1\r\nHost: test\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {10 * 1024 * 1024}\r\n\r\n"
    ).encode()
    status, body = raw_http(request)
    assert status == 413
    assert b'"error"' in body
    check()


def test_body_over_64_kib_in_chunks_is_413(
    raw_http: Callable[[bytes], tuple[int, bytes]],
    new_lease: Callable[..., Lease],
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    lease = new_lease()
    check = nothing_stored()
    piece = b"token=" + b"a" * (16 * 1024 - 6)
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in [piece] + [b"a" * 16 * 1024] * 4)
    request = (
        f"POST /v1/form/{lease.lease_id} HTTP/1.1\r\nHost: test\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode() + chunks
    status, body = raw_http(request)
    assert status == 413
    assert b'"error"' in body
    check()


def test_body_of_exactly_64_kib_is_accepted(
    http: httpx.Client, new_lease: Callable[..., Lease], key_headers: dict[str, str]
) -> None:
    lease = new_lease()
    body = b"token=" + b"a" * (MAX_BODY_BYTES - len(b"token="))
    response = http.post(f"/v1/form/{lease.lease_id}", content=body, headers=FORM)
    assert response.status_code == 200
    stored = http.get(f"/v1/leases/{lease.lease_id}/submissions", headers=key_headers).json()
    assert stored["submissions"][0]["size"] == MAX_BODY_BYTES - len(b"token=")


@pytest.mark.parametrize(
    ("content", "status", "field"),
    [
        (b"token=%zz", 400, None),
        (b"token=%ff%fe", 400, "token"),
        (b"name=nothing", 422, "token"),
        (b"token=a&token=b", 422, "token"),
    ],
)
def test_malformed_form_bodies_are_refused(
    http: httpx.Client,
    new_lease: Callable[..., Lease],
    content: bytes,
    status: int,
    field: str | None,
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    lease = new_lease()
    check = nothing_stored()
    response = http.post(f"/v1/form/{lease.lease_id}", content=content, headers=FORM)
    assert assert_json_error(response, status).get("field") == field
    check()


def test_form_body_that_is_not_urlencoded_is_415(
    http: httpx.Client,
    new_lease: Callable[..., Lease],
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    lease = new_lease()
    check = nothing_stored()
    response = http.post(f"/v1/form/{lease.lease_id}", json={"token": lease.token})
    assert_json_error(response, 415)
    check()


@pytest.mark.parametrize(
    ("content", "field"),
    [
        (b'{"frames": -1}', "frames"),
        (b'{"frames": 1001}', "frames"),
        (b'{"frames": 1.5}', "frames"),
        (b'{"frames": 1, "x": 2}', "frames"),
    ],
)
def test_out_of_bounds_frame_reports_are_422(
    http: httpx.Client,
    new_lease: Callable[..., Lease],
    content: bytes,
    field: str,
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    lease = new_lease()
    check = nothing_stored()
    response = http.post(f"/v1/frames/{lease.lease_id}", content=content)
    assert assert_json_error(response, 422)["field"] == field
    check()


def test_malformed_query_is_422(
    http: httpx.Client,
    key_headers: dict[str, str],
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    check = nothing_stored()
    for query in ["", "?window=", "?window=-1", "?window=one", "?window=1e3"]:
        response = http.get(f"/v1/audit{query}", headers=key_headers)
        assert assert_json_error(response, 422)["field"] == "window"
    check()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/v1/healthz"),
        ("GET", "/v1/leases"),
        ("PUT", "/v1/form/{lease}"),
        ("DELETE", "/v1/frames/{lease}"),
        ("POST", "/v1/audit?window=1"),
        ("POST", "/v1/leases/{lease}/submissions"),
    ],
)
def test_wrong_method_is_405(
    http: httpx.Client,
    key_headers: dict[str, str],
    new_lease: Callable[..., Lease],
    method: str,
    path: str,
    nothing_stored: Callable[[], Callable[[], None]],
) -> None:
    lease = new_lease()
    check = nothing_stored()
    response = http.request(
        method,
        path.format(lease=lease.lease_id),
        content=b"token=x",
        headers={**key_headers, **FORM},
    )
    assert_json_error(response, 405)
    assert "allow" in response.headers
    check()


def test_frames_report_adds_to_the_count(
    http: httpx.Client, key_headers: dict[str, str], new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease()
    for delta in (3, 4):
        assert http.post(f"/v1/frames/{lease.lease_id}", json={"frames": delta}).status_code == 200
    assert_json_error(http.get(f"/v1/frames/{lease.lease_id}/count"), 401)
    count = http.get(f"/v1/frames/{lease.lease_id}/count", headers=key_headers).json()
    assert count == {"lease_id": lease.lease_id, "frames": 7}


def test_the_form_page_shows_the_colour_asked_for_and_refuses_a_bad_one_with_422(
    http: httpx.Client, new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease()
    coloured = http.get(f"/v1/form/{lease.lease_id}", params={"colour": "1f9e89"})
    assert coloured.status_code == 200
    assert '<body style="background:#1f9e89">' in coloured.text
    body = assert_json_error(
        http.get(f"/v1/form/{lease.lease_id}", params={"colour": "red;}"}), 422
    )
    assert body["field"] == "colour"
