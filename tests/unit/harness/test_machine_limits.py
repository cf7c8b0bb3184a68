"""The report's machine section names what each environment may take."""

from __future__ import annotations

from cleanroom.environments.interface import SandboxLimits
from cleanroom.reports.machine import limits_info


def test_the_limits_are_named_with_their_units_and_the_canarys_weight() -> None:
    limits = SandboxLimits(memory_mib=2048, pids=1000, cpu_shares=256, tmpfs_mib=128, home_mib=64)
    info = limits_info(limits, 2048, 1536)
    assert info["env memory limit"].startswith("2048 MiB")
    assert info["env task limit"] == "1000"
    assert info["env CPU weight"] == "256 (canary 2048) within the group"
    assert info["env tmpfs size"].startswith("128 MiB each")
    assert info["env home"] == "a tmpfs of 64 MiB of its own"
    assert "less 1536 MiB for the harness" in info["environments' group"]
    assert info["sandbox runtime"].startswith("runc ")
    assert "no home in view" in info["X servers"]


def test_the_bounds_of_environment_output_on_the_host_are_named() -> None:
    limits = SandboxLimits(memory_mib=2048, pids=1000, cpu_shares=256, tmpfs_mib=128, home_mib=64)
    info = limits_info(limits, 2048, 1536)
    assert info["env output on the host"] == (
        "through pipes: at most 8 MiB a log and 32 MiB its log folder in all, the rest dropped"
    )
