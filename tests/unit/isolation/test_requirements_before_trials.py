"""A check asks its provider for what it needs before its first trial: a provider that
declared it cannot do it is refused up front, and no row is stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.environments.interface import Unsupported
from cleanroom.environments.memory import MemoryDesktops
from cleanroom.isolation.battery import TrialContext, run_test
from cleanroom.isolation.checks.channels import ChannelsCheck
from cleanroom.isolation.checks.clipboard import ClipboardCheck
from cleanroom.store.rundb import RunStore


def test_a_check_that_needs_commands_is_refused_on_a_provider_without_them(
    tmp_path: Path,
) -> None:
    pool = MemoryDesktops(tmp_path / "pool", envs=2)
    pool.start()
    with RunStore.create(tmp_path / "run") as store:
        ctx = TrialContext(pool, store, 1, store.run_dir)
        with pytest.raises(Unsupported) as info:
            run_test(ChannelsCheck(), ctx, trials=1)
        assert "commands" in info.value.missing and "real_desktops" in info.value.missing
        assert store.isolation_rows() == []


def test_a_check_that_needs_only_selections_runs_on_any_provider(tmp_path: Path) -> None:
    pool = MemoryDesktops(tmp_path / "pool", envs=2)
    pool.start()
    with RunStore.create(tmp_path / "run") as store:
        ctx = TrialContext(pool, store, 1, store.run_dir)
        rows = run_test(ClipboardCheck(settle_s=0.0), ctx, trials=1)
    assert rows and {r.result.value for r in rows} == {"clean"}
