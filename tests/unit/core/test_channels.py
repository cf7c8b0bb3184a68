"""The channels check's rows: a token of another environment found is cross; a class the
collector could not see its own token in is lost, never clean."""

from __future__ import annotations

import pytest

from cleanroom.core.channels import (
    CLASSES,
    CLOSED,
    REACH_CLASSES,
    CollectReport,
    Limits,
    PlantReport,
    channel_rows,
    limit_rows,
)
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.tokens import RolloutId, mint

ENVS = ["env00", "env01", "env02"]
TOKENS = {e: str(mint(RolloutId(e, 1, 50_000 + i))) for i, e in enumerate(ENVS)}
ALL_PLANTED = {cls: True for cls in CLASSES}


def _own_finds(env: str) -> list[dict[str, object]]:
    return [{"class": cls, "where": "own", "text": TOKENS[env]} for cls in CLASSES]


def _collect(env: str, extra: list[dict[str, object]] | None = None) -> CollectReport:
    return CollectReport(env, [*_own_finds(env), *(extra or [])], dict.fromkeys(CLASSES, True))


def _plants() -> dict[str, PlantReport]:
    return {e: PlantReport(e, ALL_PLANTED) for e in ENVS}


def _result(rows: list[IsolationRow], cls: str, src: str, dst: str) -> RowResult:
    (row,) = [
        r for r in rows if r.detail.startswith(f"{cls}:") and (r.from_env, r.to_env) == (src, dst)
    ]
    return row.result


def test_nothing_foreign_found_is_clean_for_every_class_and_pair() -> None:
    rows = channel_rows(0, 1, ENVS, _plants(), {e: _collect(e) for e in ENVS})
    assert {r.result for r in rows} == {RowResult.CLEAN}
    assert (
        len(rows) == len(CLASSES) * 6 + len(REACH_CLASSES) * 3
    )  # every ordered pair, and the harness rows


def test_a_token_of_env01_found_in_env02s_shared_memory_is_cross_from_env01() -> None:
    leak = {"class": "ipc", "where": "shm key 0x43520001", "text": TOKENS["env01"]}
    collects = {e: _collect(e) for e in ENVS} | {"env02": _collect("env02", [leak])}
    rows = channel_rows(0, 1, ENVS, _plants(), collects)
    assert _result(rows, "ipc", "env01", "env02") is RowResult.CROSS
    assert _result(rows, "ipc", "env02", "env01") is RowResult.CLEAN
    assert _result(rows, "files", "env01", "env02") is RowResult.CLEAN


def test_a_visible_ipc_key_names_its_sender_even_when_unreadable() -> None:
    leak = {"class": "ipc", "where": "msg key 0x43520002", "key_index": 2}
    collects = {e: _collect(e) for e in ENVS} | {"env01": _collect("env01", [leak])}
    rows = channel_rows(0, 1, ENVS, _plants(), collects)
    assert _result(rows, "ipc", "env02", "env01") is RowResult.CROSS


def test_a_collector_that_did_not_see_its_own_token_is_lost_not_clean() -> None:
    blind = CollectReport(
        "env02",
        [f for f in _own_finds("env02") if f["class"] != "network"],
        dict.fromkeys(CLASSES, True),
    )
    collects = {e: _collect(e) for e in ENVS} | {"env02": blind}
    rows = channel_rows(0, 1, ENVS, _plants(), collects)
    assert _result(rows, "network", "env01", "env02") is RowResult.LOST
    assert _result(rows, "network", "env02", "env01") is RowResult.CLEAN


def test_a_class_the_sender_could_not_plant_is_lost_and_a_missing_report_loses_everything() -> None:
    plants = _plants() | {"env01": PlantReport("env01", ALL_PLANTED | {"files": "nowhere"})}
    collects = {e: _collect(e) for e in ENVS if e != "env00"}
    rows = channel_rows(0, 1, ENVS, plants, collects)
    assert _result(rows, "files", "env01", "env02") is RowResult.LOST
    into_canary = [r for r in rows if r.to_env == "env00" and r.from_env != "harness"]
    assert into_canary and all(r.result is RowResult.LOST for r in into_canary)


def test_reaching_the_harness_is_cross_in_the_direction_of_the_flow() -> None:
    reached = [
        {"class": "control_plane", "where": "pool 127.0.0.1:5000"},
        {"class": "harness_files", "where": "/runs/x"},
    ]
    plants = _plants() | {"env01": PlantReport("env01", ALL_PLANTED, reached)}
    rows = channel_rows(0, 1, ENVS, plants, {e: _collect(e) for e in ENVS})
    cross = {(r.from_env, r.to_env) for r in rows if r.result is RowResult.CROSS}
    assert cross == {("env01", "harness"), ("harness", "env01")}


def test_an_environment_whose_probe_never_answered_has_lost_harness_rows() -> None:
    plants = _plants() | {"env02": PlantReport("env02", error="no answer within 90 s")}
    rows = channel_rows(0, 1, ENVS, plants, {e: _collect(e) for e in ENVS})
    harness = [
        r for r in rows if "harness" in (r.from_env, r.to_env) and "env02" in (r.from_env, r.to_env)
    ]
    assert harness and all(r.result is RowResult.LOST for r in harness)
    assert _result(rows, "ipc", "env02", "env01") is RowResult.LOST


def test_keys_the_kernel_refused_to_make_are_clean_though_no_one_could_prove_its_collect() -> None:
    # Under the sandbox's system call filter no environment can make a key: nothing is
    # in that class, so nothing can cross, and no collector can find its own token.
    refused = {e: PlantReport(e, {**ALL_PLANTED, "keys": "refused"}) for e in ENVS}
    collects = {
        e: CollectReport(
            e,
            [f for f in _own_finds(e) if f["class"] != "keys"],
            dict.fromkeys(CLASSES, True),
        )
        for e in ENVS
    }

    rows = channel_rows(0, 1, ENVS, refused, collects)

    keys = [r for r in rows if r.detail.startswith("keys:")]
    assert keys and {r.result for r in keys} == {RowResult.CLEAN}
    assert all("refused" in r.detail for r in keys)


def test_a_key_of_env01_seen_in_proc_keys_by_env02_is_cross() -> None:
    # The leak the filter closes: keys have no namespace, so /proc/keys lists every key
    # a user may view, whoever's keyring holds it.
    line = f"1a2b3c I--Q--- 1 perm 3f3f3f3f 1001 1001 user cleanroom-probe-{TOKENS['env01']}: 32"
    collects = {e: _collect(e) for e in ENVS}
    collects["env02"] = _collect("env02", [{"class": "keys", "where": "/proc/keys", "text": line}])

    rows = channel_rows(0, 1, ENVS, _plants(), collects)

    assert _result(rows, "keys", "env01", "env02") is RowResult.CROSS
    assert _result(rows, "keys", "env02", "env01") is RowResult.CLEAN


def test_a_refused_sender_does_not_hide_a_key_another_sender_planted() -> None:
    plants = _plants()
    plants["env00"] = PlantReport("env00", {**ALL_PLANTED, "keys": "refused"})
    line = f"1 I 1 perm 3f3f3f3f 1001 1001 user cleanroom-probe-{TOKENS['env01']}: 32"
    collects = {e: _collect(e) for e in ENVS}
    collects["env02"] = _collect("env02", [{"class": "keys", "where": "/proc/keys", "text": line}])

    rows = channel_rows(0, 1, ENVS, plants, collects)

    assert _result(rows, "keys", "env00", "env02") is RowResult.CLEAN
    assert _result(rows, "keys", "env01", "env02") is RowResult.CROSS


@pytest.mark.parametrize("cls", ["locks", "watches"])
def test_a_lock_or_watch_seen_on_another_environments_file_is_cross_from_it(cls: str) -> None:
    plants = {e: PlantReport(e, ALL_PLANTED) for e in ENVS}
    # Locks and watches carry no token: the file's index says whose it is.
    seen = {"class": cls, "where": "flock on /usr/lib/python3.11/abc.py", "key_index": 1}
    collects = {e: _collect(e, [seen] if e == ENVS[2] else None) for e in ENVS}
    rows = channel_rows(0, 1, ENVS, plants, collects)
    crossed = [(r.from_env, r.to_env) for r in rows if r.result is RowResult.CROSS]
    assert crossed == [(ENVS[1], ENVS[2])]


ALLOWED = Limits(
    memory_bytes=3 << 30, pids=4096, cpu_shares=512, tmpfs_bytes=512 << 20, home_bytes=1 << 30
)
HELD = {
    "memory_bytes": 3 << 30,
    "pids": 4096,
    "cpu_shares": 512,
    "tmpfs_bytes": 512 << 20,
    "home_bytes": 1 << 30,
}


def _limit_plants(seen: dict[str, object]) -> dict[str, PlantReport]:
    return {e: PlantReport(e, {**ALL_PLANTED, "limits_seen": seen.get(e, HELD)}) for e in ENVS}


def test_limits_in_force_everywhere_are_clean_rows() -> None:
    rows = limit_rows(0, 1, ENVS, _limit_plants({}), dict.fromkeys(ENVS, ALLOWED))
    assert len(rows) == 6 and {r.result for r in rows} == {RowResult.CLEAN}


@pytest.mark.parametrize(
    "seen",
    [
        {**HELD, "memory_bytes": None},  # no memory limit at all
        {**HELD, "pids": 1 << 22},  # a pids limit past the pool's
        {**HELD, "tmpfs_bytes": 12 << 30},  # a /tmp as big as half the machine
        {**HELD, "cpu_shares": 1024},  # weighs as much as the harness
        {**HELD, "home_bytes": 400 << 30},  # a home on the host's disk, beside the runs
    ],
)
def test_one_environment_past_its_limits_crosses_to_every_other(seen: dict[str, object]) -> None:
    rows = limit_rows(0, 1, ENVS, _limit_plants({"env01": seen}), dict.fromkeys(ENVS, ALLOWED))
    crossed = {(r.from_env, r.to_env) for r in rows if r.result is RowResult.CROSS}
    assert crossed == {("env01", "env00"), ("env01", "env02")}


def test_a_probe_that_said_nothing_of_its_limits_is_lost_not_clean() -> None:
    plants = _limit_plants({})
    plants["env02"] = PlantReport("env02", ALL_PLANTED)  # no limits_seen
    rows = limit_rows(0, 1, ENVS, plants, dict.fromkeys(ENVS, ALLOWED))
    assert {r.result for r in rows if r.from_env == "env02"} == {RowResult.LOST}
    junk = _limit_plants({"env01": {"memory_bytes": "lots", "pids": True}})
    rows = limit_rows(0, 1, ENVS, junk, dict.fromkeys(ENVS, ALLOWED))
    assert {r.result for r in rows if r.from_env == "env01"} == {RowResult.CROSS}


def test_the_x_servers_reads_are_judged_on_the_control_without_an_own_token() -> None:
    # A sandboxed server reads no home, its own environment's included: the collector's
    # proof is the control font folder, shown by ``tested`` alone.
    no_own = {
        e: CollectReport(
            e,
            [f for f in _own_finds(e) if f["class"] != "x_server"],
            dict.fromkeys(CLASSES, True),
        )
        for e in ENVS
    }
    rows = channel_rows(0, 1, ENVS, _plants(), no_own)
    assert _result(rows, "x_server", "env01", "env02") is RowResult.CLEAN
    read = {
        "class": "x_server",
        "where": "font path",
        "text": f"-cleanroom-probe-{TOKENS['env01']}-",
    }
    no_own["env02"] = CollectReport("env02", [read], dict.fromkeys(CLASSES, True))
    rows = channel_rows(0, 1, ENVS, _plants(), no_own)
    assert _result(rows, "x_server", "env01", "env02") is RowResult.CROSS
    blind = CollectReport("env02", [], {**dict.fromkeys(CLASSES, True), "x_server": "no control"})
    rows = channel_rows(0, 1, ENVS, _plants(), {**no_own, "env02": blind})
    assert _result(rows, "x_server", "env01", "env02") is RowResult.LOST


def test_a_receiver_whose_view_has_no_such_list_is_clean_even_when_the_sender_planted() -> None:
    masked = CollectReport(
        "env02", _own_finds("env02"), dict.fromkeys(CLASSES, True) | {"proc_locks": CLOSED}
    )
    collects = {e: _collect(e) for e in ENVS} | {"env02": masked}
    rows = channel_rows(0, 1, ENVS, _plants(), collects)
    assert _result(rows, "proc_locks", "env01", "env02") is RowResult.CLEAN
    leak = {"class": "proc_locks", "where": "/proc/locks", "text": TOKENS["env02"]}
    collects["env01"] = _collect("env01", [leak])
    rows = channel_rows(0, 1, ENVS, _plants(), collects)
    assert _result(rows, "proc_locks", "env02", "env01") is RowResult.CROSS


def test_a_found_token_is_cross_even_when_the_receiver_says_its_list_is_closed() -> None:
    leak = {"class": "aio", "where": "fs.aio-nr", "key_index": 1}
    closed = CollectReport(
        "env02", [*_own_finds("env02"), leak], dict.fromkeys(CLASSES, True) | {"aio": CLOSED}
    )
    rows = channel_rows(0, 1, ENVS, _plants(), {e: _collect(e) for e in ENVS} | {"env02": closed})
    assert _result(rows, "aio", "env01", "env02") is RowResult.CROSS


def test_reaching_a_program_of_its_own_user_is_cross_from_the_environment_to_the_harness() -> None:
    reached = [{"class": "harness_programs", "where": "pidfd_getfd took descriptor 0 of pid 9"}]
    plants = _plants() | {"env01": PlantReport("env01", ALL_PLANTED, reached)}
    rows = channel_rows(0, 1, ENVS, plants, {e: _collect(e) for e in ENVS})
    (row,) = [r for r in rows if r.detail.startswith("harness_programs:") and r.from_env == "env01"]
    assert row.to_env == "harness" and row.result is RowResult.CROSS


def test_a_pty_pool_without_a_bound_is_more_than_the_limits_allow() -> None:
    allowed = Limits(memory_bytes=None, pids=None, cpu_shares=None, tmpfs_bytes=None, ptys=16)
    assert Limits.from_probe({"ptys": None}).beyond(allowed) == ["ptys unlimited > 16"]
    assert Limits.from_probe({"ptys": 16}).beyond(allowed) == []
