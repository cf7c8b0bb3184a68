"""Whatever an agent types is stored and returned byte for byte, or refused; never
executed, never mangled."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote_from_bytes

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleanroom.store.submissions import SubmissionStore
from cleanroom.verify_server.client import Lease, VerifyClient

FORM = {"Content-Type": "application/x-www-form-urlencoded"}

HOSTILE = [
    "'; DROP TABLE submissions; --",
    '" OR 1=1 --',
    "Robert'); DELETE FROM leases WHERE ('1'='1",
    "nul\x00inside\x00",
    "\x00",
    "",
    "   leading and trailing spaces   ",
    "\u202eevil\u202c RTL override",
    "zero\u200bwidth\u200djoiner\ufeff",
    "emoji 🧪🔥 and family 👨‍👩‍👧‍👦",
    "combining e\u0301 vs \u00e9",
    "<script>alert(1)</script>&amp;",
    "%41 is not decoded twice + plus",
    "line\r\nbreaks\nand\ttabs",
    "\U0010ffff last code point",
    "a" * 60_000,
]


def submit(http: httpx.Client, lease: Lease, raw: bytes) -> httpx.Response:
    return http.post(
        f"/v1/form/{lease.lease_id}",
        content=b"token=" + quote_from_bytes(raw).encode(),
        headers=FORM,
    )


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_text_comes_back_byte_for_byte(
    http: httpx.Client,
    client: VerifyClient,
    db: SubmissionStore,
    new_lease: Callable[..., Lease],
    text: str,
) -> None:
    lease = new_lease()
    assert submit(http, lease, text.encode()).status_code == 200
    [row] = client.submissions(lease.lease_id)
    assert row.text == text
    [stored] = db.submissions(lease.lease_id)
    assert stored.body == text.encode()


def test_sql_in_a_submission_leaves_the_tables_intact(
    http: httpx.Client, client: VerifyClient, new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease()
    submit(http, lease, b"'); DROP TABLE submissions; DROP TABLE leases; --")
    submit(http, lease, lease.token.encode())
    assert [s.text for s in client.submissions(lease.lease_id)][1] == lease.token
    assert client.healthz()


def test_invalid_utf8_is_refused_not_replaced(
    http: httpx.Client, db: SubmissionStore, new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease()
    for raw in [b"\xff", b"ok\xc3", b"\xed\xa0\x80", b"\xc0\xaf"]:
        assert submit(http, lease, raw).status_code == 400
    assert db.submissions(lease.lease_id) == []


def test_a_raw_form_post_keeps_plus_as_space_and_escapes_as_bytes(
    http: httpx.Client, client: VerifyClient, new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease()
    http.post(f"/v1/form/{lease.lease_id}", content=b"token=a+b%2Bc%25d%00e", headers=FORM)
    assert client.submissions(lease.lease_id)[0].text == "a b+c%d\x00e"


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=st.text(st.characters(codec="utf-8"), max_size=200))
def test_any_unicode_text_round_trips_exactly(
    http: httpx.Client, client: VerifyClient, new_lease: Callable[..., Lease], text: str
) -> None:
    lease = new_lease()
    assert submit(http, lease, text.encode()).status_code == 200
    assert [s.text for s in client.submissions(lease.lease_id)] == [text]
