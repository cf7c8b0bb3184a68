"""An equivalent of OSWorld's in-VM server for agents that talk to ``http://{vm_ip}:5000``.

OSWorld hands an agent ``env.vm_ip``, and some agents build their own client of the VM's
server from it (``f"http://{vm_ip}:5000/screenshot"``). Here ``vm_ip`` is
``ENV:KEY@ADDRESS``: the environment's name and key as the URL's user and password, and a
loopback address this server listens on, port `VM_SERVER_PORT`. An HTTP client sends the
user and password of such a URL as Basic authorisation, so the agent's unchanged URL
reaches its own environment and no other: a request opens the environment it names only
with that environment's key (`policy.http.env_key`); another environment's key, no key,
or a name the server does not serve is 401.

Routes, as OSWorld's server answers them (each call made by `EnvironmentController`, so as
the environment's user, in its sandbox, on its display): ``GET /screenshot`` (PNG),
``GET /accessibility`` (``{"AT": xml}``), ``GET /terminal`` (``{"output": null}``),
``GET /platform``, ``POST /screen_size``, ``/window_size`` (form ``app_class_name``),
``/desktop_path``, ``/list_directory`` (``{"path"}``), ``/file`` (form ``file_path``),
``/execute`` (``{"command", "shell"}``), ``/run_python`` (``{"code"}``),
``/run_bash_script`` (``{"script", "timeout", "working_dir"}``), ``/start_recording``,
``/end_recording``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import json
import socket
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from cleanroom.environments.errors import PoolError, StaleGeneration
from cleanroom.environments.policy.http import env_key
from cleanroom.rollouts.osworld_controller import EnvironmentController
from cleanroom.rollouts.osworld_http import serving

# The port OSWorld's agents put after ``vm_ip``.
VM_SERVER_PORT = 5000
MAX_BODY_BYTES = 4 << 20
# The loopback addresses tried, in order, for a free port `VM_SERVER_PORT`.
_ADDRESSES = tuple(f"127.0.50.{n}" for n in range(1, 255))


class NoFreeAddress(PoolError):
    """No loopback address had port `VM_SERVER_PORT` free for OSWorld's server."""


def vm_ip(env: str, key: str, address: str) -> str:
    """What ``env.vm_ip`` is for environment ``env``: its name and key as the user and
    password of the server's ``address``."""
    return f"{env}:{env_key(key, env)}@{address}"


def build_vm_server_app(
    controller_of: Callable[[str], EnvironmentController | None],
    key: str,
    *,
    episode_over: Callable[[str], bool] | None = None,
) -> Starlette:
    """OSWorld's server's routes over the controller ``controller_of`` gives for an
    environment's name (None: it serves none), each opened only by its environment's key
    derived from ``key``. A run gives the controller of the agent's latest episode, and
    ``episode_over`` says when that episode has ended: then only ``/end_recording``
    answers (OSWorld's runner ends its recording after ``evaluate``), and every other
    route is 409 ``episode_over``, since the window's trials may be running there."""

    def environment_of(request: Request) -> tuple[str, EnvironmentController] | None:
        scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, _, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        controller = controller_of(user)
        expected = env_key(key, user).encode()
        if controller is None or not hmac.compare_digest(password.encode(), expected):
            return None
        return user, controller

    async def fields(request: Request) -> dict[str, Any]:
        raw = await request.body()
        if len(raw) > MAX_BODY_BYTES:
            raise ValueError(f"the body is over {MAX_BODY_BYTES} bytes")
        if not raw:
            return {}
        if request.headers.get("content-type", "").startswith("application/json"):
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise ValueError("the body is a JSON object")
            return data
        return {k: v[-1] for k, v in parse_qs(raw.decode()).items()}

    def route(
        call: Callable[[EnvironmentController, dict[str, Any]], Response], after_episode: bool
    ) -> Any:
        async def endpoint(request: Request) -> Response:
            found = environment_of(request)
            if found is None:
                return JSONResponse({"error": "unauthorised"}, status_code=401)
            user, controller = found
            if not after_episode and episode_over is not None and episode_over(user):
                return JSONResponse({"error": "episode_over"}, status_code=409)
            try:
                body = await fields(request)
            except (ValueError, UnicodeDecodeError) as exc:
                return JSONResponse({"error": f"bad request: {exc}"}, status_code=400)
            try:
                return await run_in_threadpool(call, controller, body)
            except StaleGeneration as exc:
                return JSONResponse({"error": f"stale: {exc}"}, status_code=409)
            except (KeyError, TypeError, ValueError) as exc:
                return JSONResponse({"error": f"bad request: {exc!r}"}, status_code=400)
            except PoolError as exc:
                return JSONResponse({"error": str(exc)}, status_code=503)

        return endpoint

    def screenshot(c: EnvironmentController, _: dict[str, Any]) -> Response:
        png = c.get_screenshot()
        if png is None:
            return JSONResponse({"error": "no screenshot"}, status_code=500)
        return Response(png, media_type="image/png")

    def accessibility(c: EnvironmentController, _: dict[str, Any]) -> Response:
        tree = c.get_accessibility_tree()
        if tree is None:
            return JSONResponse({"error": "no accessibility tree"}, status_code=500)
        return JSONResponse({"AT": tree})

    def get_file(c: EnvironmentController, body: dict[str, Any]) -> Response:
        data = c.get_file(str(body["file_path"]))
        if data is None:
            return JSONResponse({"error": "file not found"}, status_code=404)
        return Response(data, media_type="application/octet-stream")

    def execute(c: EnvironmentController, body: dict[str, Any]) -> Response:
        command = body["command"]
        shell = bool(body.get("shell", False))
        if not (isinstance(command, str) or _strings(command)):
            raise ValueError("command is a string or a list of strings")
        return JSONResponse(c.execute(command, shell=shell))

    def run_bash(c: EnvironmentController, body: dict[str, Any]) -> Response:
        timeout = body.get("timeout", 30)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError("timeout is a positive number of seconds")
        working_dir = body.get("working_dir")
        return JSONResponse(
            c.run_bash_script(str(body["script"]), int(timeout), working_dir and str(working_dir))
        )

    def window_size(c: EnvironmentController, body: dict[str, Any]) -> Response:
        size = c.get_vm_window_size(str(body["app_class_name"]))
        if size is None:
            return JSONResponse({"error": "no such window"}, status_code=404)
        return JSONResponse(size)

    def list_directory(c: EnvironmentController, body: dict[str, Any]) -> Response:
        tree = c.get_vm_directory_tree(str(body["path"]))
        if tree is None:
            return JSONResponse({"error": "not a directory"}, status_code=404)
        return JSONResponse({"directory_tree": tree})

    def start_recording(c: EnvironmentController, _: dict[str, Any]) -> Response:
        c.start_recording()
        return JSONResponse({"status": "success"})

    def end_recording(c: EnvironmentController, _: dict[str, Any]) -> Response:
        return Response(c.end_recording_bytes(), media_type="image/apng")

    calls: list[tuple[str, str, Callable[[EnvironmentController, dict[str, Any]], Response]]] = [
        ("/screenshot", "GET", screenshot),
        ("/accessibility", "GET", accessibility),
        ("/terminal", "GET", lambda c, _: JSONResponse({"output": c.get_terminal_output()})),
        ("/platform", "GET", lambda c, _: PlainTextResponse(c.get_vm_platform())),
        ("/screen_size", "POST", lambda c, _: JSONResponse(c.get_vm_screen_size())),
        ("/window_size", "POST", window_size),
        (
            "/desktop_path",
            "POST",
            lambda c, _: JSONResponse({"desktop_path": c.get_vm_desktop_path()}),
        ),
        ("/list_directory", "POST", list_directory),
        ("/file", "POST", get_file),
        ("/execute", "POST", execute),
        ("/run_python", "POST", lambda c, b: JSONResponse(c.run_python_script(str(b["code"])))),
        ("/run_bash_script", "POST", run_bash),
        ("/start_recording", "POST", start_recording),
        ("/end_recording", "POST", end_recording),
    ]
    return Starlette(
        routes=[
            Route(path, route(call, after_episode=path == "/end_recording"), methods=[m])
            for path, m, call in calls
        ]
    )


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


@contextlib.contextmanager
def serving_vm_server(app: Starlette) -> Iterator[str]:
    """``app`` on port `VM_SERVER_PORT` of the first loopback address where it is free,
    for the block; yields that address."""
    for address in _ADDRESSES:
        if not _free(address):
            continue
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(serving(app, port=VM_SERVER_PORT, host=address))
        except OSError:
            continue  # taken between the look and the bind
        with stack:
            yield address
        return
    raise NoFreeAddress(f"no loopback address has port {VM_SERVER_PORT} free")


def _free(address: str) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((address, VM_SERVER_PORT))
        except OSError:
            return False
    return True
