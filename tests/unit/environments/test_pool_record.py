"""Pool records: what a pool writes so that its orphans can be found after a crash."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from cleanroom.environments.pool.orphans import USER_PATTERN, Removed
from cleanroom.environments.pool.pool_record import (
    PoolRecord,
    read_record,
    read_records,
    remove_record,
    write_record,
)


def _record(pool_id: str = "abc123") -> PoolRecord:
    return PoolRecord.for_this_process(
        pool_id,
        Path("/pools") / pool_id,
        Path("/runs/one"),
        [f"cr{pool_id}env00", f"cr{pool_id}env01"],
        containers=True,
        harness_authority="/tmp/harness.Xauthority",
    )


def test_a_record_survives_a_round_trip_through_its_file(tmp_path: Path) -> None:
    record = _record()
    write_record(record, tmp_path)
    assert read_record("abc123", tmp_path) == record
    assert read_records(tmp_path) == [record]
    remove_record("abc123", tmp_path)
    assert read_record("abc123", tmp_path) is None
    remove_record("abc123", tmp_path)  # removing twice is fine


def test_the_owner_is_alive_only_while_the_same_process_runs() -> None:
    record = _record()
    assert record.owner_pid == os.getpid() and record.owner_alive()
    assert not replace(record, owner_pid=2**22 + 1).owner_alive()  # above pid_max: no process
    # The same pid with another start time is a later process that reused the pid.
    assert not replace(record, owner_start=(record.owner_start or 0) + 1).owner_alive()


def test_an_unreadable_record_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json")
    write_record(_record("def456"), tmp_path)
    assert [r.pool_id for r in read_records(tmp_path)] == ["def456"]


def test_pool_users_are_recognised_by_name() -> None:
    assert USER_PATTERN.match("cr0a1b2cenv03")["pool"] == "0a1b2c"  # type: ignore[index]
    for display_server in ("cr0a1b2cenv03d", "cr0a1b2cenv03bd"):
        assert USER_PATTERN.match(display_server)["pool"] == "0a1b2c"  # type: ignore[index]
    for other in ("root", "cr0a1b2cenv3", "crXYZ123env01", "cr0a1b2cenv01x", "www-data"):
        assert USER_PATTERN.match(other) is None


def test_the_summary_names_what_was_removed() -> None:
    removed = Removed("abc123", users=["crabc123env00"], processes=[10, 11], displays=[":120"])
    line = removed.summary()
    assert "pool abc123" in line and "1 user(s) (crabc123env00)" in line
    assert "2 process(es)" in line and ":120" in line and "0 container(s)" in line
    assert removed.anything and not Removed("x").anything
