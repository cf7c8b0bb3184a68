"""Group commit: the form submissions of concurrent requests stored in one transaction.

A request hands its row to `GroupCommit.store` and waits. The first row of a batch
schedules the commit for the event loop's next turn, so every request that reached the
store on this turn joins the same transaction; the commit then answers each waiting
request with its row's id. A request is answered with an id only after the transaction
holding its row has committed, and a batch whose transaction fails answers every one of
its requests with `SubmissionNotStored` (503): a 2xx always means a stored row.

Everything runs on the event loop's thread, which owns the server's one connection. In
WAL mode with ``synchronous = NORMAL`` a commit is a write into the WAL file, not a disk
flush, so holding the loop for it costs microseconds, and one commit per batch instead
of one per request is what lets submissions keep up with the HTTP layer.
"""

from __future__ import annotations

import asyncio
import logging

from cleanroom.store.submissions import NewSubmission, SubmissionStore
from cleanroom.verify_server.errors import SubmissionNotStored

_log = logging.getLogger(__name__)


class GroupCommit:
    """Store submissions in batches, one transaction per turn of the event loop."""

    def __init__(self, store: SubmissionStore) -> None:
        self._store = store
        self._pending: list[tuple[NewSubmission, asyncio.Future[int]]] = []

    async def store(self, new: NewSubmission) -> int:
        """Store ``new`` with the other rows of this turn; its id once they have committed.

        Raises `SubmissionNotStored` if the batch's transaction failed (nothing of it
        was stored)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()
        if not self._pending:
            loop.call_soon(self._commit)
        self._pending.append((new, done))
        return await done

    def _commit(self) -> None:
        batch, self._pending = self._pending, []
        try:
            ids = self._store.add_submission_batch([new for new, _ in batch])
        except Exception as exc:
            # Whatever went wrong, no request of the batch may be left waiting or told
            # that its row is stored.
            _log.error("a batch of %d submissions was not stored: %s", len(batch), exc)
            for _, done in batch:
                if not done.done():
                    done.set_exception(SubmissionNotStored("the submission could not be stored"))
            return
        # A request whose client went away has a cancelled future; its row is stored.
        for (_, done), sid in zip(batch, ids, strict=True):
            if not done.done():
                done.set_result(sid)
