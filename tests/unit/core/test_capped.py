"""The capped buffer keeps the first bytes up to its cap and counts the rest."""

from __future__ import annotations

import pytest

from cleanroom.core.capped import ByteQuota, CappedBuffer


def test_bytes_under_the_cap_are_kept_whole() -> None:
    buf = CappedBuffer(10)
    buf.add(b"abc")
    buf.add(b"def")
    assert buf.value() == b"abcdef"
    assert not buf.truncated
    assert not buf.full


def test_an_overrun_keeps_the_first_cap_bytes_and_counts_the_rest() -> None:
    buf = CappedBuffer(4)
    buf.add(b"abc")
    buf.add(b"defgh")
    buf.add(b"ij")
    assert buf.value() == b"abcd"
    assert buf.held == 4
    assert buf.dropped == 6
    assert buf.truncated
    assert buf.full


def test_bytes_never_read_count_as_dropped() -> None:
    buf = CappedBuffer(4)
    buf.add(b"abcd")
    buf.mark_dropped(100)
    assert buf.dropped == 100
    assert buf.truncated


def test_a_negative_cap_is_refused() -> None:
    with pytest.raises(ValueError):
        CappedBuffer(-1)


def test_a_quota_grants_up_to_the_cap_and_counts_the_rest_dropped() -> None:
    quota = ByteQuota(10, used=4)
    assert quota.take(4) == 4
    assert quota.take(5) == 2
    assert quota.take(3) == 0
    assert quota.dropped == 6
