"""Group commit: the rows of concurrent requests share one transaction, a request learns
its id only after that transaction committed, and a batch that fails answers every one
of its requests with an error, never with a 2xx."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cleanroom.store.submissions import LeaseRecord, StoreTotals, SubmissionStore
from cleanroom.verify_server.app import create_app
from cleanroom.verify_server.attribution import attribute
from cleanroom.verify_server.errors import SubmissionNotStored
from cleanroom.verify_server.group_commit import GroupCommit

LEASE = LeaseRecord(
    "lease-a", "env01", "env01-w001-r0001", "env01-w001-r0001-0123abcd", 1, 0.0, 1e12
)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "verify.sqlite3"


@pytest.fixture
def store(db_path: Path) -> Iterator[SubmissionStore]:
    with SubmissionStore.open(db_path) as s:
        s.add_lease(LEASE)
        yield s


def fail_inserts_of(db_path: Path, body: bytes) -> None:
    """Make the database itself refuse a row with this body, mid-transaction (a fault
    the store cannot tell from a full disk)."""
    trigger = (
        f"CREATE TRIGGER refuse BEFORE INSERT ON submissions WHEN NEW.body = x'{body.hex()}' "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    with sqlite3.connect(db_path) as conn:
        conn.execute(trigger)


def commit_count(store: SubmissionStore) -> list[int]:
    """Count the commits the store's connection makes from here on."""
    commits: list[int] = []
    store._conn.set_trace_callback(lambda sql: commits.append(1) if sql == "COMMIT" else None)
    return commits


def test_concurrent_submissions_share_one_commit_and_each_gets_its_own_row(
    store: SubmissionStore,
) -> None:
    group = GroupCommit(store)
    commits = commit_count(store)
    bodies = [f"text {i}".encode() for i in range(20)]

    async def submit_all() -> list[int]:
        return await asyncio.gather(*(group.store(attribute(LEASE, b, 1.0)) for b in bodies))

    ids = asyncio.run(submit_all())

    assert len(commits) == 1
    assert len(set(ids)) == len(bodies)
    stored = {s.id: s.body for s in store.submissions(LEASE.lease_id)}
    assert [stored[i] for i in ids] == bodies


def test_an_id_is_given_only_once_its_row_is_committed(store: SubmissionStore) -> None:
    group = GroupCommit(store)
    seen_in_transaction: list[bool] = []

    async def submit() -> int:
        task = asyncio.ensure_future(group.store(attribute(LEASE, b"x", 1.0)))
        await asyncio.sleep(0)  # the request has handed its row over and is waiting
        seen_in_transaction.append(task.done())
        return await task

    sid = asyncio.run(submit())

    assert seen_in_transaction == [False]
    assert [s.id for s in store.submissions(LEASE.lease_id)] == [sid]
    assert not store._conn.in_transaction


def test_a_batch_whose_transaction_fails_fails_every_request_and_stores_none(
    store: SubmissionStore, db_path: Path
) -> None:
    fail_inserts_of(db_path, b"poison")
    group = GroupCommit(store)
    bodies = [b"a", b"b", b"poison", b"c"]

    async def submit_all() -> list[int | BaseException]:
        rows = (group.store(attribute(LEASE, b, 1.0)) for b in bodies)
        return await asyncio.gather(*rows, return_exceptions=True)

    results = asyncio.run(submit_all())

    assert all(isinstance(r, SubmissionNotStored) for r in results)
    assert store.totals().submissions == 0
    assert asyncio.run(submit_after(group)) > 0  # the next batch is stored as usual


async def submit_after(group: GroupCommit) -> int:
    return await group.store(attribute(LEASE, b"later", 2.0))


def test_a_failed_batch_answers_5xx_to_each_of_its_requests_never_2xx(
    store: SubmissionStore, db_path: Path
) -> None:
    fail_inserts_of(db_path, b"env01-w001-r0001-0123abcd")
    app = create_app(store, "key")

    async def post_all() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://verify") as http:
            form = {"Content-Type": "application/x-www-form-urlencoded"}
            posts = (
                http.post(f"/v1/form/{LEASE.lease_id}", content=body, headers=form)
                for body in [b"token=env01-w001-r0001-0123abcd", b"token=other"] * 4
            )
            return list(await asyncio.gather(*posts))

    responses = asyncio.run(post_all())

    assert [r.status_code for r in responses] == [503] * 8
    assert all(r.json()["error"] == "the submission could not be stored" for r in responses)
    assert store.totals() == StoreTotals(leases=1, submissions=0, frames=0)
