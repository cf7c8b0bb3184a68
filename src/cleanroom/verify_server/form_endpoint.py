"""The form endpoint (``GET``/``POST /v1/form/{lease_id}``), written against raw ASGI.

Form submissions are the server's hot path, so this endpoint skips Starlette's request
and response objects: it reads the body the size guard already buffered, decodes it
with the standard library, stores one row through the group commit and writes a prebuilt
response once that row has committed. `FormFastPath`
also routes ``POST /v1/form/{lease_id}`` to it ahead of Starlette's middleware and
router, which cost about a fifth of the request on this path; every other request,
including ``GET`` of the same URL, goes through Starlette as usual.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from cleanroom.store.submissions import LeaseRecord, SubmissionStore
from cleanroom.verify_server import pages
from cleanroom.verify_server.attribution import attribute
from cleanroom.verify_server.budget import Overrun, SubmissionBudgets
from cleanroom.verify_server.errors import (
    ApiError,
    InvalidField,
    LeaseExpired,
    LeaseNotFound,
    LeaseOverBudget,
    UnsupportedMediaType,
)
from cleanroom.verify_server.group_commit import GroupCommit
from cleanroom.verify_server.inputs import form_token, is_urlencoded

PAGE_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]
_FORM_HEADERS = [*PAGE_HEADERS, (b"content-security-policy", pages.FORM_CSP.encode())]
# A lease changes only when it is closed, through `LeaseLookup.close`, and this process is
# its only writer, so a lease read once can be served from memory; only leases that
# exist are ever cached.
_LEASE_CACHE_MAX = 65_536


class LeaseLookup:
    """Find leases by id (through a small cache) and refuse unknown or expired ones."""

    def __init__(self, store: SubmissionStore, clock: Callable[[], float]) -> None:
        self.store = store
        self.clock = clock
        self._cache: dict[str, LeaseRecord] = {}

    def get(self, lease_id: str) -> LeaseRecord:
        """The lease, expired or not; `LeaseNotFound` if there is none."""
        lease = self._cache.get(lease_id)
        if lease is None:
            lease = self.store.lease(lease_id)
            if lease is None:
                raise LeaseNotFound(f"no lease {lease_id!r}")
            if len(self._cache) >= _LEASE_CACHE_MAX:
                self._cache.clear()
            self._cache[lease_id] = lease
        return lease

    def close(self, lease_id: str) -> LeaseRecord:
        """End a lease now: its form and frame routes refuse from here on."""
        lease = self.store.close_lease(lease_id, self.clock())
        if lease is None:
            raise LeaseNotFound(f"no lease {lease_id!r}")
        self._cache[lease_id] = lease
        return lease

    def open(self, lease_id: str) -> tuple[LeaseRecord, float]:
        """The lease and the current time, if the lease has not expired; else `LeaseExpired`."""
        lease = self.get(lease_id)
        now = self.clock()
        if now >= lease.expires_at:
            raise LeaseExpired(f"lease {lease_id!r} has expired")
        return lease, now


def _content_type(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return str(value.decode("latin-1"))
    return None


async def _read_body(receive: Receive) -> bytes:
    # Behind the size guard this is one message holding the whole (bounded) body.
    message = await receive()
    body: bytes = message.get("body", b"")
    while message.get("more_body", False):
        message = await receive()
        body += message.get("body", b"")
    return body


async def _respond(send: Send, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class FormEndpoint:
    """GET: the form page. POST: store the ``token`` field, attributed to the lease,
    within the lease's submission budget."""

    def __init__(
        self, leases: LeaseLookup, commits: GroupCommit, budgets: SubmissionBudgets | None = None
    ) -> None:
        self.leases = leases
        self.commits = commits
        self.budgets = budgets or SubmissionBudgets()

    def _charge(self, lease: LeaseRecord, body: bytes, now: float) -> None:
        """Count a body against its lease's budget; past it, record the overrun (once per
        lease) and refuse: 429 past the count, 413 past the bytes."""
        budgets = self.budgets
        if not budgets.known(lease.lease_id):
            budgets.seed(lease.lease_id, *self.leases.store.spent(lease.lease_id))
        over = budgets.charge(lease.lease_id, len(body))
        if over is None:
            return
        self.leases.store.add_overrun(lease, over.value, now)
        limit = budgets.budget
        if over is Overrun.COUNT:
            raise LeaseOverBudget(
                f"lease {lease.lease_id!r} has stored its {limit.submissions} submissions",
                status=429,
                kind=over.value,
            )
        raise LeaseOverBudget(
            f"lease {lease.lease_id!r} has stored its {limit.nbytes} bytes of submissions",
            status=413,
            kind=over.value,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        lease, now = self.leases.open(scope["path_params"]["lease_id"])
        if scope["method"] != "POST":
            # uvicorn drops the body of a HEAD response itself.
            page = pages.form_page(lease.lease_id, _page_colour(scope))
            await _respond(send, page.encode(), _FORM_HEADERS)
            return
        if not is_urlencoded(_content_type(scope)):
            raise UnsupportedMediaType("the form takes application/x-www-form-urlencoded")
        body = await _read_body(receive)
        token = form_token(body)
        self._charge(lease, body, now)
        # Attribution comes from the lease alone; other fields, headers and cookies of
        # the request are never read.
        sid = await self.commits.store(attribute(lease, token, now))
        page = pages.confirmation_page(token.decode("utf-8"), len(token), sid)
        await _respond(send, page.encode(), _FORM_HEADERS)


def _page_colour(scope: Scope) -> str | None:
    """The optional ``colour`` query parameter of a form page request, checked."""
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("colour")
    if not values:
        return None
    try:
        return pages.check_colour(values[-1])
    except pages.BadColour as exc:
        raise InvalidField("colour", str(exc)) from exc


_FORM_PREFIX = "/v1/form/"
_log = logging.getLogger(__name__)


async def send_error(send: Send, status: int, body: dict[str, object]) -> None:
    """Answer with a JSON error body."""
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


class FormFastPath:
    """Route ``POST /v1/form/{lease_id}`` straight to the form endpoint; all else to ``app``."""

    def __init__(self, app: ASGIApp, form: FormEndpoint) -> None:
        self.app = app
        self.form = form

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            path: str = scope["path"]
            if path.startswith(_FORM_PREFIX):
                lease_id = path[len(_FORM_PREFIX) :]
                # The same match as Starlette's "{lease_id}": one non-empty path segment.
                if lease_id and "/" not in lease_id:
                    scope["path_params"] = {"lease_id": lease_id}
                    try:
                        await self.form(scope, receive, send)
                    except ApiError as exc:
                        await send_error(send, exc.status, exc.body())
                    except Exception:
                        _log.exception("form submission failed")
                        await send_error(
                            send, 500, {"error": "internal server error", "status": 500}
                        )
                    return
        await self.app(scope, receive, send)
