"""Leaky setups: each leak makes env02 borrow exactly the resource it names."""

from __future__ import annotations

import pytest

from cleanroom.environments.interface import Unsupported
from cleanroom.environments.leaky_setups import Leak, Sharing, donor_gives, parse_leak, sharing_for
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.session.template import libreoffice_settings, without_document_locks


def test_the_isolated_pool_shares_nothing() -> None:
    assert not sharing_for(None, "env02").any


def test_only_env02_borrows() -> None:
    for leak in Leak:
        assert not sharing_for(leak, "env01").any
        assert not sharing_for(leak, "env03").any


def test_shared_display_borrows_only_the_display() -> None:
    assert sharing_for(Leak.SHARED_DISPLAY, "env02") == Sharing(display=True)


def test_shared_clipboard_bridges_only_the_clipboard() -> None:
    assert sharing_for(Leak.SHARED_CLIPBOARD, "env02") == Sharing(clipboard_bridge=True)


@pytest.mark.parametrize(
    ("leak", "resource"),
    [
        (Leak.SHARED_HOME, "home"),
        (Leak.SHARED_PROFILE, "profile"),
        (Leak.SHARED_RUNTIME_DIR, "runtime_dir"),
    ],
)
def test_account_bound_leaks_share_the_user_and_one_resource(leak: Leak, resource: str) -> None:
    plan = sharing_for(leak, "env02")
    shared = {k for k in ("display", "home", "runtime_dir", "profile", "clipboard_bridge")
              if getattr(plan, k)}  # fmt: skip
    assert plan.account and shared == {resource}


def test_leak_names_parse_and_none_means_isolated() -> None:
    assert parse_leak("shared-home") is Leak.SHARED_HOME
    assert parse_leak("none") is None


def test_an_unknown_leak_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="shared-display"):
        parse_leak("shared-kernel")


def test_a_leaky_pool_needs_two_environments() -> None:
    with pytest.raises(ValueError):
        PoolConfig(envs=1, leak=Leak.SHARED_DISPLAY)


def test_turning_document_locks_off_keeps_the_other_settings() -> None:
    out = without_document_locks(libreoffice_settings())
    assert "UseDocumentOOoLockFile" in out and "CapitalAtStartSentence" in out


def test_a_leaky_setup_is_refused_in_containers_mode_before_anything_starts() -> None:
    with pytest.raises(Unsupported, match=r"containers provider .*: leaky setups") as info:
        PoolConfig(envs=2, containers=True, leak=Leak.SHARED_HOME)
    assert info.value.missing == ["leaky_setups"]


def test_only_leaks_that_share_a_session_or_the_host_take_the_sandboxes_away() -> None:
    unsandboxed = {leak for leak in Leak if donor_gives(leak).unsandboxed}
    assert unsandboxed == {Leak.OPEN_HOST, Leak.SHARED_PROFILE, Leak.SHARED_RUNTIME_DIR}
    assert not donor_gives(None).any
    assert sharing_for(Leak.OPEN_HOST, "env02") == Sharing(unsandboxed=True)


def test_unfiltered_takes_the_filter_from_both_and_leaves_their_sandboxes() -> None:
    assert donor_gives(Leak.UNFILTERED) == Sharing(unfiltered=True)
    assert sharing_for(Leak.UNFILTERED, "env02") == Sharing(unfiltered=True)
    assert not donor_gives(Leak.UNFILTERED).unsandboxed
