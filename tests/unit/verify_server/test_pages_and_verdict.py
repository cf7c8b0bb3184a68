"""The pages carry what the browser tests rely on; the verdict reads stored texts."""

from __future__ import annotations

import base64
import hashlib

import pytest

from cleanroom.core.outcomes import Status
from cleanroom.verify_server import pages
from cleanroom.verify_server.verdict import form_verdict

TOKEN = "env01-w001-r0001-0123abcd"


def test_the_form_page_has_a_token_input_and_a_submit_button() -> None:
    html = pages.form_page("abc")
    assert 'name="token"' in html
    assert 'type="submit"' in html
    assert 'action="/v1/form/abc"' in html


def test_the_confirmation_page_escapes_what_was_submitted() -> None:
    html = pages.confirmation_page("<script>x</script>", 18, 7)
    assert "<script>x" not in html
    assert "&lt;script&gt;" in html


def test_the_frame_script_is_allowed_by_its_hash_and_nothing_else() -> None:
    digest = base64.b64encode(hashlib.sha256(pages.FRAMES_SCRIPT.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in pages.FRAMES_CSP
    assert f"<script>{pages.FRAMES_SCRIPT}</script>" in pages.frames_page()


def test_the_frame_script_counts_only_while_visible() -> None:
    assert 'document.visibilityState === "visible"' in pages.FRAMES_SCRIPT


def test_a_stored_copy_of_the_token_is_success() -> None:
    outcome = form_verdict(TOKEN, ["wrong", f" {TOKEN}\n"])
    assert outcome.status is Status.SUCCESS
    assert outcome.details["matched"] == 1


def test_no_copy_of_the_token_is_a_valid_failure() -> None:
    for texts in ([], ["wrong"], [f"prefix {TOKEN}"], [TOKEN.upper()]):
        outcome = form_verdict(TOKEN, texts)
        assert outcome.status is Status.FAILURE
        assert outcome.valid


def test_the_form_page_takes_an_optional_background_colour() -> None:
    assert "background" not in pages.form_page("abc")
    assert '<body style="background:#1f9e89">' in pages.form_page("abc", "1f9e89")


@pytest.mark.parametrize("colour", ["#1f9e89", "1F9E89", "1f9e8", "1f9e89;x", "red", ""])
def test_a_page_colour_other_than_six_lowercase_hex_digits_is_refused(colour: str) -> None:
    with pytest.raises(pages.BadColour):
        pages.form_page("abc", colour)
