"""The policy interface over HTTP (server routes and the client handle).

Routes (JSON unless noted; ``generation`` is required on every environment route):

    GET  /v1/envs                                   names and generations    harness key
    GET  /v1/envs/{env}/{screenshot|windows|focused_text|clipboard|accessibility_tree|state}
         ?generation=N                                                    env key
    POST /v1/envs/{env}/act    {"generation": N, "action": {...}}            env key
    POST /v1/envs/{env}/reset  {"generation": N}                             harness key
    GET  /v1/admin/status                                                    harness key
    POST /v1/admin/open_url    {"env": ..., "url": ...}                      harness key
    POST /v1/admin/shutdown                                                  harness key

Every route needs a key (``Authorization: Bearer ...``). The harness key opens all of
them; an environment's key (`env_key`, derived from the harness key) opens only that
environment's observe and act routes, so a policy given it can reach no other
environment. Environments themselves cannot reach the API at all: it listens on the
host's loopback, outside every sandbox.

A stale generation is 409 (and a line in the action log; ``left_by`` says who broke it
when a recovery left it), an environment found broken by a failed action 410 (with who
broke it, `core.breakage`), the canary 403, an unknown environment 404, a malformed
request 400, a missing or wrong key 401, any other pool failure 503.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from cleanroom.core.breakage import Breakage
from cleanroom.environments.actions import parse_action
from cleanroom.environments.errors import (
    BadAction,
    CanaryIsReadOnly,
    DisplayHeld,
    EnvironmentBroken,
    PoolError,
    SelectionHeld,
    SelectionUnanswered,
    StaleGeneration,
    UnknownEnvironment,
)
from cleanroom.environments.interface import (
    OBSERVATIONS,
    Desktops,
    Observation,
    Screenshot,
    Wire,
)
from cleanroom.environments.policy.handle import PolicyHandle

KEY_HEADER = "Authorization"
# The error of a 423 answer that says a client of the environment's display held it (the
# other 423 is a selection owner of the environment's that never answered).
DISPLAY_HELD = "display_held"


def _error(status: int, error: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": error, **extra}, status_code=status)


def _failure(exc: Exception) -> JSONResponse:
    if isinstance(exc, StaleGeneration):
        return _error(
            409,
            "stale_generation",
            detail=str(exc),
            env=exc.env,
            aimed=exc.aimed,
            current=exc.current,
            left_by=exc.left_by.to_json() if exc.left_by is not None else None,
        )
    if isinstance(exc, EnvironmentBroken):
        return _error(
            410,
            "environment_broken",
            detail=str(exc),
            env=exc.env,
            generation=exc.generation,
            breakage=exc.breakage.to_json(),
        )
    if isinstance(exc, DisplayHeld):  # a client of the environment's display grabbed it
        return _error(
            423,
            DISPLAY_HELD,
            detail=str(exc),
            env=exc.env,
            doing=exc.doing,
            server_pid=exc.server_pid,
            unread=exc.unread,
            selection=exc.selection if isinstance(exc, SelectionHeld) else None,
        )
    if isinstance(exc, SelectionUnanswered):  # the environment's own program, mute
        return _error(
            423,
            "selection_unanswered",
            detail=str(exc),
            env=exc.env,
            selection=exc.selection,
            owner=exc.owner,
        )
    if isinstance(exc, CanaryIsReadOnly):
        return _error(403, "canary", detail=str(exc))
    if isinstance(exc, UnknownEnvironment):
        return _error(404, "unknown_environment", detail=str(exc))
    if isinstance(exc, BadAction):
        return _error(400, "bad_request", detail=str(exc))
    return _error(503, "pool_error", detail=str(exc))


def _generation(value: Any) -> int:
    if value is None:
        raise BadAction("every request names the generation it aims at")
    try:
        generation = int(value)
    except (TypeError, ValueError):
        raise BadAction(f"generation must be an integer, got {value!r}") from None
    if isinstance(value, bool) or generation < 0:
        raise BadAction(f"generation must be a non-negative integer, got {value!r}")
    return generation


async def _body(request: Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BadAction("the body is not JSON") from None
    if not isinstance(data, dict):
        raise BadAction("the body is a JSON object")
    return data


def env_key(key: str, env: str) -> str:
    """The key that opens only ``env``'s observe and act routes (derived, never stored)."""
    return hmac.new(key.encode(), f"policy:{env}".encode(), hashlib.sha256).hexdigest()


def build_app(pool: Desktops, key: str, on_shutdown: Callable[[], None]) -> Starlette:
    """The HTTP app over one pool, guarded by the harness ``key`` where it matters."""

    def authorised(request: Request, env: str | None = None) -> bool:
        given = request.headers.get(KEY_HEADER, "").encode()
        if hmac.compare_digest(given, f"Bearer {key}".encode()):
            return True
        return env is not None and hmac.compare_digest(
            given, f"Bearer {env_key(key, env)}".encode()
        )

    async def envs(request: Request) -> Response:
        if not authorised(request):
            return _error(401, "unauthorised")
        return JSONResponse({"envs": {n: pool.generation(n) for n in pool.names}})

    async def observe(request: Request) -> Response:
        name, what = request.path_params["env"], request.path_params["what"]
        if not authorised(request, name):
            return _error(401, "unauthorised")
        try:
            kind = OBSERVATIONS.get(what)
            if kind is None:
                raise BadAction(f"unknown observation {what!r}")
            generation = _generation(request.query_params.get("generation"))
            value = (await run_in_threadpool(pool.observe, name, generation, kind)).to_json()
        except PoolError as exc:
            return _failure(exc)
        if isinstance(value, bytes):
            return Response(value, media_type="image/png")
        return JSONResponse(value)

    async def act(request: Request) -> Response:
        name = request.path_params["env"]
        if not authorised(request, name):
            return _error(401, "unauthorised")
        try:
            body = await _body(request)
            generation = _generation(body.get("generation"))
            action = parse_action(body.get("action"))
            result = await run_in_threadpool(pool.act, name, generation, action)
        except PoolError as exc:
            return _failure(exc)
        return JSONResponse({"ok": True, "generation": result.generation, "value": result.value})

    async def reset(request: Request) -> Response:
        if not authorised(request):
            return _error(401, "unauthorised")
        name = request.path_params["env"]
        try:
            body = await _body(request)
            generation = _generation(body.get("generation"))
            new = await run_in_threadpool(pool.policy_reset, name, generation)
        except PoolError as exc:
            return _failure(exc)
        return JSONResponse({"ok": True, "generation": new})

    async def status(request: Request) -> Response:
        if not authorised(request):
            return _error(401, "unauthorised")
        return JSONResponse(await run_in_threadpool(pool.describe))

    async def open_url(request: Request) -> Response:
        if not authorised(request):
            return _error(401, "unauthorised")
        try:
            body = await _body(request)
            name, url = body.get("env"), body.get("url")
            if not isinstance(name, str) or not isinstance(url, str):
                raise BadAction("open_url needs 'env' and 'url'")
            await run_in_threadpool(pool.open_url, name, url)
        except PoolError as exc:
            return _failure(exc)
        return JSONResponse({"ok": True})

    async def shutdown(request: Request) -> Response:
        if not authorised(request):
            return _error(401, "unauthorised")
        on_shutdown()
        return JSONResponse({"ok": True})

    routes = [
        Route("/v1/envs", envs, methods=["GET"]),
        Route("/v1/envs/{env}/act", act, methods=["POST"]),
        Route("/v1/envs/{env}/reset", reset, methods=["POST"]),
        Route("/v1/envs/{env}/{what}", observe, methods=["GET"]),
        Route("/v1/admin/status", status, methods=["GET"]),
        Route("/v1/admin/open_url", open_url, methods=["POST"]),
        Route("/v1/admin/shutdown", shutdown, methods=["POST"]),
    ]
    return Starlette(routes=routes)


# -- the client side ------------------------------------------------------------------


class PoolUnavailable(PoolError):
    """The supervisor's HTTP API could not be reached or answered nonsense."""


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        data = response.json()
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    detail = str(data.get("detail") or data.get("error") or response.text[:200])
    code = response.status_code
    if code == 409:
        raise StaleGeneration(
            str(data.get("env", "?")),
            _int(data.get("aimed")),
            _int(data.get("current")),
            Breakage.from_json(data.get("left_by")),
        )
    if code == 410:
        breakage = Breakage.from_json(data.get("breakage"))
        if breakage is not None:
            raise EnvironmentBroken(
                str(data.get("env", "?")), _int(data.get("generation")), breakage
            )
    if code == 423 and data.get("error") == DISPLAY_HELD:
        env = str(data.get("env", "?"))
        pid, unread = _int_or_none(data.get("server_pid")), _int_or_none(data.get("unread"))
        selection = data.get("selection")
        if selection is not None:
            raise SelectionHeld(env, str(selection), pid, unread)
        raise DisplayHeld(env, str(data.get("doing", "?"))[:200], pid, unread)
    if code == 423:
        raise SelectionUnanswered(
            str(data.get("env", "?")), str(data.get("selection", "?")), _int(data.get("owner"))
        )
    if code == 403:
        raise CanaryIsReadOnly(detail)
    if code == 404:
        raise UnknownEnvironment(detail)
    if code == 400:
        raise BadAction(detail)
    if code == 401:
        raise PoolError("the harness key was refused")
    raise PoolUnavailable(f"{code}: {detail}")


def _int_or_none(value: Any) -> int | None:
    return None if value is None else _int(value)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


class PoolClient:
    """HTTP access to a running pool with the harness key, or with one environment's key
    (then only that environment's observe and act routes answer)."""

    def __init__(self, base_url: str, key: str | None = None, timeout_s: float = 60.0) -> None:
        headers = {KEY_HEADER: f"Bearer {key}"} if key else {}
        # The pool is on loopback; a proxy from the environment must not intercept.
        self.http = httpx.Client(
            base_url=base_url, headers=headers, timeout=timeout_s, trust_env=False
        )

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request; transport failures become `PoolUnavailable`, errors named ones."""
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise PoolUnavailable(f"{method} {path}: {exc!r}") from exc
        _raise_for(response)
        return response

    def generations(self) -> dict[str, int]:
        """Every environment's generation."""
        data: dict[str, int] = self.request("GET", "/v1/envs").json()["envs"]
        return data

    def status(self) -> dict[str, Any]:
        """The pool's status (needs the key)."""
        data: dict[str, Any] = self.request("GET", "/v1/admin/status").json()
        return data

    def open_url(self, env: str, url: str) -> None:
        """Open a URL in an environment's browser (needs the key)."""
        self.request("POST", "/v1/admin/open_url", json={"env": env, "url": url})

    def shutdown(self) -> None:
        """Ask the supervisor to stop the pool (needs the key)."""
        self.request("POST", "/v1/admin/shutdown")

    def handle(self, env: str) -> HttpHandle:
        """A policy handle on one environment at its current generation."""
        return HttpHandle(self, env)

    def close(self) -> None:
        """Close connections."""
        self.http.close()


class HttpHandle(PolicyHandle):
    """A policy handle that acts through the HTTP API."""

    def __init__(self, client: PoolClient, env: str) -> None:
        self.client = client
        self.env = env
        self.generation = self.refresh()

    def act(self, action: dict[str, Any]) -> str | None:
        body = {"generation": self.generation, "action": action}
        value = self.client.request("POST", f"/v1/envs/{self.env}/act", json=body).json()["value"]
        if value is not None and not isinstance(value, str):
            raise PoolError(f"the act route answered a value that is no text: {value!r:.80}")
        return value

    def observe(self, kind: type[Observation]) -> Wire:
        response = self.client.request(
            "GET", f"/v1/envs/{self.env}/{kind.kind}", params={"generation": self.generation}
        )
        if kind is Screenshot:
            return response.content
        data: Wire = response.json()
        return data

    def reset(self) -> int:
        body = {"generation": self.generation}
        data = self.client.request("POST", f"/v1/envs/{self.env}/reset", json=body).json()
        self.generation = int(data["generation"])
        return self.generation

    def refresh(self) -> int:
        gens = self.client.generations()
        if self.env not in gens:
            raise UnknownEnvironment(f"no environment named {self.env!r}")
        self.generation = gens[self.env]
        return self.generation
