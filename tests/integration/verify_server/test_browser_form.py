"""In real headless Chromium, a token typed into the form page is stored exactly once,
byte for byte, attributed to the lease's environment."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cleanroom.store.submissions import SubmissionStore
from cleanroom.verify_server.client import Lease, VerifyClient

pytestmark = pytest.mark.browser


def type_and_submit(tab: Any, url: str, text: str) -> None:
    tab.goto(url)
    field = tab.locator("input[name=token]")
    field.press_sequentially(text)
    with tab.expect_navigation():
        tab.locator("button[type=submit]").click()


def test_typing_the_token_and_submitting_stores_exactly_that_row(
    tab: Any, client: VerifyClient, db: SubmissionStore, new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease(env="env04", window=12)
    type_and_submit(tab, lease.form_url, lease.token)

    assert tab.locator("#text").inner_text() == lease.token
    [stored] = db.submissions(lease.lease_id)
    assert stored.body == lease.token.encode()
    assert (stored.env, stored.rollout_id, stored.window) == ("env04", lease.rollout_id, 12)
    assert client.verify_form(lease).status == "success"


def test_typed_unicode_reaches_the_store_unchanged(
    tab: Any, db: SubmissionStore, new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease()
    text = "'; DROP TABLE submissions; -- \u202eRTL\u202c zero\u200bwidth 🧪 é"
    type_and_submit(tab, lease.form_url, text)
    [stored] = db.submissions(lease.lease_id)
    assert stored.body == text.encode()
