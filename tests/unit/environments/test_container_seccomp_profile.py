"""Containers mode's seccomp profile: Docker's default less what a sandbox's filter
refuses, and its masked paths: Docker's with the kernel's machine-wide lists."""

from __future__ import annotations

from typing import Any

from cleanroom.environments.containers.seccomp_profile import (
    MASKED_PATHS,
    container_profile,
    docker_default,
)
from cleanroom.environments.session import syscall_filter


def _allowed(profile: dict[str, Any]) -> set[str]:
    return {
        n for r in profile["syscalls"] if r["action"] == "SCMP_ACT_ALLOW" and not r.get("args")
        for n in r["names"]
    }  # fmt: skip


def test_dockers_default_allows_what_the_sandbox_filter_refuses() -> None:
    # The reason the profile exists: without it a container may trace and use AIO.
    assert {"ptrace", "io_setup", "io_uring_setup", "mincore"} <= _allowed(docker_default())


def test_nothing_the_sandbox_filter_refuses_is_allowed_and_the_rest_of_dockers_is_kept() -> None:
    base, profile = docker_default(), container_profile(docker_default())
    assert not _allowed(profile) & set(syscall_filter.DENIED)
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    kept = _allowed(base) - set(syscall_filter.DENIED) - {"fadvise64", "preadv2"}
    assert kept <= _allowed(profile) and "read" in kept


def test_fadvise_is_allowed_with_every_advice_but_dontneed_and_preadv2_without_nowait() -> None:
    rules = [r for r in container_profile(docker_default())["syscalls"] if r.get("args")]
    fadvise = {r["args"][0]["valueTwo"] for r in rules if r["names"] == ["fadvise64"]}
    assert fadvise == {0, 1, 2, 3, 5}
    (preadv2,) = [r["args"][0] for r in rules if r["names"] == ["preadv2"]]
    assert (preadv2["value"], preadv2["valueTwo"]) == (syscall_filter.RWF_NOWAIT, 0)
    assert all(
        r["action"] == "SCMP_ACT_ALLOW" for r in rules if r["names"][0] in ("fadvise64", "preadv2")
    )


def test_the_masked_paths_are_dockers_and_the_kernels_machine_wide_lists() -> None:
    assert {"/proc/keys", "/proc/kcore", "/sys/firmware"} <= set(MASKED_PATHS)
    assert {"/proc/locks", "/proc/sys/fs/aio-nr"} <= set(MASKED_PATHS)
