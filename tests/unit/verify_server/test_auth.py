"""The harness key file is private and the key is compared exactly."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from cleanroom.verify_server.auth import KeyFileError, bearer_matches, load_or_create_key


def test_a_missing_key_file_is_created_owner_only(tmp_path: Path) -> None:
    key = load_or_create_key(tmp_path / "k")
    assert len(key) >= 32
    assert stat.S_IMODE((tmp_path / "k").stat().st_mode) == 0o600


def test_an_existing_key_file_is_reused(tmp_path: Path) -> None:
    first = load_or_create_key(tmp_path / "k")
    assert load_or_create_key(tmp_path / "k") == first


def test_an_empty_key_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "k").write_text("\n")
    with pytest.raises(KeyFileError):
        load_or_create_key(tmp_path / "k")


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        ("Bearer s3cret", True),
        ("Bearer s3cret ", False),
        ("bearer s3cret", False),
        ("Bearer s3cre", False),
        ("s3cret", False),
        ("", False),
        (None, False),
        ("Bearer s3cr\u00e9t", False),
    ],
)
def test_only_the_exact_bearer_key_matches(header: str | None, ok: bool) -> None:
    assert bearer_matches(header, "s3cret") is ok
