"""The verify server's ASGI app: routes, handlers and JSON errors (Starlette, no FastAPI).

The form endpoint, the hot path, lives in `form_endpoint` as a raw ASGI app. Handlers
call the store directly on the event loop: one SQLite statement takes microseconds, far
less than a hop to a worker thread, and the server has exactly one connection, which
this keeps on one thread.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from cleanroom.store.submissions import LeaseRecord, SubmissionRecord, SubmissionStore
from cleanroom.verify_server import pages
from cleanroom.verify_server.auth import bearer_matches
from cleanroom.verify_server.budget import LeaseBudget, SubmissionBudgets
from cleanroom.verify_server.errors import ApiError, Unauthorized
from cleanroom.verify_server.form_endpoint import FormEndpoint, FormFastPath, LeaseLookup
from cleanroom.verify_server.group_commit import GroupCommit
from cleanroom.verify_server.inputs import parse_frames_report, parse_lease_request, parse_window
from cleanroom.verify_server.limits import MAX_BODY_BYTES, BodyLimit

Clock = Callable[[], float]

_PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def iso_time(t: float) -> str:
    """A Unix time as ISO 8601 UTC with a ``Z``, to the microsecond."""
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def _submission_json(s: SubmissionRecord) -> dict[str, object]:
    return {
        "id": s.id,
        # Stored bytes are valid UTF-8 (checked on the way in), so this is lossless.
        "text": s.body.decode("utf-8"),
        "size": len(s.body),
        "env": s.env,
        "rollout_id": s.rollout_id,
        "window": s.window,
        "submitted_at": iso_time(s.submitted_at),
        "found_tokens": list(s.found_tokens),
        "found_envs": list(s.found_envs),
        "cross": s.cross,
    }


class _Handlers:
    """The endpoints, sharing one store, the harness key and a clock."""

    def __init__(self, store: SubmissionStore, key: str, leases: LeaseLookup) -> None:
        self.store = store
        self.key = key
        self.leases = leases
        self.clock = leases.clock

    def _require_key(self, request: Request) -> None:
        if not bearer_matches(request.headers.get("authorization"), self.key):
            raise Unauthorized("a valid harness key is required (Authorization: Bearer ...)")

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def create_lease(self, request: Request) -> Response:
        self._require_key(request)
        req = parse_lease_request(await request.body())
        now = self.clock()
        lease = LeaseRecord(
            lease_id=secrets.token_urlsafe(24),
            env=req.env,
            rollout_id=req.rollout_id,
            token=req.token,
            window=req.window,
            created_at=now,
            expires_at=now + req.ttl_s,
        )
        self.store.add_lease(lease)
        base = str(request.base_url).rstrip("/")
        return JSONResponse(
            {
                "lease_id": lease.lease_id,
                "form_url": f"{base}/v1/form/{lease.lease_id}",
                "frames_url": f"{base}/v1/frames/{lease.lease_id}",
                "expires_at": iso_time(lease.expires_at),
                "env": lease.env,
                "rollout_id": lease.rollout_id,
                "window": lease.window,
            },
            status_code=201,
        )

    async def lease_submissions(self, request: Request) -> Response:
        self._require_key(request)
        lease = self.leases.get(request.path_params["lease_id"])
        rows = self.store.submissions(lease.lease_id)
        return JSONResponse(
            {
                "lease_id": lease.lease_id,
                "env": lease.env,
                "rollout_id": lease.rollout_id,
                "window": lease.window,
                "expires_at": iso_time(lease.expires_at),
                "submissions": [_submission_json(s) for s in rows],
            }
        )

    async def close_lease(self, request: Request) -> Response:
        self._require_key(request)
        lease = self.leases.close(request.path_params["lease_id"])
        return JSONResponse({"lease_id": lease.lease_id, "expires_at": iso_time(lease.expires_at)})

    async def frames(self, request: Request) -> Response:
        lease, _ = self.leases.open(request.path_params["lease_id"])
        if request.method != "POST":
            return HTMLResponse(
                pages.frames_page(),
                headers={**_PAGE_HEADERS, "Content-Security-Policy": pages.FRAMES_CSP},
            )
        delta = parse_frames_report(await request.body())
        total = self.store.add_frames(lease.lease_id, delta)
        return JSONResponse({"lease_id": lease.lease_id, "frames": total})

    async def frames_count(self, request: Request) -> Response:
        self._require_key(request)
        lease = self.leases.get(request.path_params["lease_id"])
        return JSONResponse(
            {"lease_id": lease.lease_id, "frames": self.store.frames(lease.lease_id)}
        )

    async def audit(self, request: Request) -> Response:
        self._require_key(request)
        window = parse_window(request.query_params.get("window"))
        rows = [
            {
                "submission_id": r.submission_id,
                "token": r.token,
                "token_env": r.token_env,
                "attributed_env": r.attributed_env,
                "lease_id": r.lease_id,
                "rollout_id": r.rollout_id,
                "window": r.window,
                "submitted_at": iso_time(r.submitted_at),
            }
            for r in self.store.audit(window)
        ]
        overruns = [
            {"lease_id": o.lease_id, "env": o.env, "rollout_id": o.rollout_id, "kind": o.kind}
            for o in self.store.overruns(window)
        ]
        return JSONResponse(
            {"window": window, "rows": rows, "cross": len(rows), "overruns": overruns}
        )


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


async def _http_error(request: Request, exc: Exception) -> Response:
    # Starlette's own 404 (no route) and 405 (wrong method), as JSON like every error.
    assert isinstance(exc, HTTPException)
    body = {"error": exc.detail, "status": exc.status_code}
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


async def _server_error(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": "internal server error", "status": 500}, status_code=500)


def create_app(
    store: SubmissionStore,
    key: str,
    *,
    clock: Clock = time.time,
    max_body: int = MAX_BODY_BYTES,
    lease_budget: LeaseBudget | None = None,
) -> ASGIApp:
    """The verify server app over ``store``, guarded by ``key``, the body-size limit and
    each lease's submission budget."""
    leases = LeaseLookup(store, clock)
    h = _Handlers(store, key, leases)
    form = FormEndpoint(leases, GroupCommit(store), SubmissionBudgets(lease_budget))
    routes = [
        Route("/v1/healthz", h.healthz, methods=["GET"]),
        Route("/v1/leases", h.create_lease, methods=["POST"]),
        Route("/v1/leases/{lease_id}/submissions", h.lease_submissions, methods=["GET"]),
        Route("/v1/leases/{lease_id}/close", h.close_lease, methods=["POST"]),
        Route("/v1/form/{lease_id}", form, methods=["GET", "POST"]),
        Route("/v1/frames/{lease_id}", h.frames, methods=["GET", "POST"]),
        Route("/v1/frames/{lease_id}/count", h.frames_count, methods=["GET"]),
        Route("/v1/audit", h.audit, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            ApiError: _api_error,
            HTTPException: _http_error,
            Exception: _server_error,
        },
    )
    return BodyLimit(FormFastPath(app, form), max_body)
