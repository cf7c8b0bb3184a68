"""What the memory controller counted for one sandbox, read from both hierarchies: the
agent's own limit is told apart from the shared group's shortage."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.core.breakage import MemoryCount
from cleanroom.environments.session import cgroups

CONTAINER = "cr-env01-ab12cd34"


def _v1(root: Path, failcnt: str, memsw: str | None, oom_kill: int) -> None:
    group = root / "memory" / "cleanroom" / CONTAINER
    group.mkdir(parents=True)
    (group / "memory.failcnt").write_text(failcnt + "\n")
    if memsw is not None:
        (group / "memory.memsw.failcnt").write_text(memsw + "\n")
    (group / "memory.oom_control").write_text(
        f"oom_kill_disable 0\nunder_oom 0\noom_kill {oom_kill}\n"
    )


def _v2(root: Path, local: str, events: str) -> None:
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    group = root / "cleanroom" / CONTAINER
    group.mkdir(parents=True)
    (group / "memory.events.local").write_text(local)
    (group / "memory.events").write_text(events)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cgroups, "CGROUP_FS", tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("failcnt", "memsw", "oom_kill", "expected"),
    [
        ("0", "0", 0, MemoryCount(False, 0)),
        ("12", "0", 1, MemoryCount(True, 1)),  # its own limit, a kill: its own OOM
        ("0", "3", 1, MemoryCount(True, 1)),  # its memory-and-swap limit
        ("0", None, 2, MemoryCount(False, 2)),  # killed under its limit: the group's
    ],
)
def test_v1_counts(
    root: Path, failcnt: str, memsw: str | None, oom_kill: int, expected: MemoryCount
) -> None:
    _v1(root, failcnt, memsw, oom_kill)
    assert cgroups.memory_count(CONTAINER) == expected


def test_v2_reads_its_own_local_events_and_the_kills(root: Path) -> None:
    _v2(root, "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n", "low 0\nmax 4\noom 1\noom_kill 1\n")
    count = cgroups.memory_count(CONTAINER)
    assert count == MemoryCount(True, 1) and count.own_oom


def test_v2_kills_without_its_own_limit_are_foreign(root: Path) -> None:
    _v2(root, "max 0\noom 0\noom_kill 1\n", "max 0\noom 0\noom_kill 1\n")
    count = cgroups.memory_count(CONTAINER)
    assert count is not None and count.foreign_oom and not count.own_oom


def test_a_cgroup_that_is_gone_or_junk_counts_nothing(root: Path) -> None:
    assert cgroups.memory_count(CONTAINER) is None
    _v1(root, "junk", None, 0)
    assert cgroups.memory_count(CONTAINER) is None
