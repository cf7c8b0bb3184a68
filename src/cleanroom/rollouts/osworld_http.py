"""OSWorld's ``DesktopEnv`` interface over HTTP, for agents that run elsewhere.

Routes (JSON; every one keyed per environment like the policy API, `env_key`):

    POST /v1/osworld/{env}/reset     {"task_config": {...} | null,
                                      "action_space": "pyautogui"}  (optional)
                                     -> {"observation": OBS}
    POST /v1/osworld/{env}/step      {"action": ..., "pause": 2.0}
                                     -> {"observation": OBS, "reward": 0.0, "done": bool,
                                         "info": {...}}
    POST /v1/osworld/{env}/evaluate  -> {"score": float, "outcome": {...}}

OBS is OSWorld's observation with the screenshot as base64 PNG; ``action_space`` is the
episode's (the interface's own when it is left out); the outcome is the evaluation's, in
its wire form (`Outcome.to_json`). Each environment's
calls run one at a time (one agent per environment). The environment's key, or the
harness key, opens its routes; no other environment's. Errors: a malformed body, task
config or an action OSWorld's schema refuses is 400; a stale generation 409; an
evaluation the infrastructure kept from being made 409 ``invalid`` with the outcome,
never a score; in a run (`osworld_outside`), a step with no episode running 409
``no_episode`` and a reset the run did not open a rollout for in time 503 ``not_open``;
an unknown environment or the canary 404 or 403; a missing or wrong key 401; any other
pool failure 503.

`OSWorldHTTPEnv` is the client: the same ``reset``, ``step`` and ``evaluate`` as
`OSWorldDesktopEnv`, over the network, keeping the last evaluation's outcome as it does.
`serving` runs the app on loopback in a thread.
"""

from __future__ import annotations

import base64
import contextlib
import hmac
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.outcomes import Outcome
from cleanroom.environments.errors import (
    BadAction,
    PoolError,
    StaleGeneration,
    UnknownEnvironment,
)
from cleanroom.environments.interface import Desktops
from cleanroom.environments.osworld_env.actions import ACTION_SPACES
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.policy.http import KEY_HEADER, env_key
from cleanroom.rollouts.osworld_desktop_env import (
    InvalidEvaluation,
    NoTask,
    OSWorldDesktopEnv,
)
from cleanroom.rollouts.osworld_outside import NoEpisode, NotOpen
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task import TaskFileError

MAX_BODY_BYTES = 4 << 20
log = logging.getLogger(__name__)


def _error(status: int, error: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": error, **extra}, status_code=status)


def _observation_json(obs: dict[str, Any]) -> dict[str, Any]:
    return {**obs, "screenshot": base64.b64encode(obs["screenshot"]).decode("ascii")}


class OSWorldEnvs(Protocol):
    """What the routes call, by environment name: the pool's environments directly
    (`PoolEnvs`), or a run's rollouts (`osworld_outside.OutsideAgents`)."""

    def check(self, name: str) -> None:
        """Raise `UnknownEnvironment` for a name that is not one of the pool's."""

    def reset(
        self, name: str, task_config: dict[str, Any] | None, action_space: str | None = None
    ) -> dict[str, Any]: ...

    def step(
        self, name: str, action: Any, pause: float
    ) -> tuple[dict[str, Any], float, bool, dict]: ...

    def evaluate(self, name: str) -> Outcome:
        """The evaluation's outcome; `InvalidEvaluation` when it could not be made."""


class PoolEnvs:
    """Every acting environment of ``pool`` as an `OSWorldDesktopEnv` of its own; each
    environment's calls run one at a time."""

    def __init__(
        self,
        pool: Desktops,
        *,
        action_space: str = "pyautogui",
        settings: CheckSettings | None = None,
        require_a11y_tree: bool = True,
    ) -> None:
        self.pool = pool
        self.action_space = action_space
        self.settings = settings
        self.require_a11y_tree = require_a11y_tree
        self._envs: dict[str, tuple[OSWorldDesktopEnv, threading.Lock]] = {}
        self._making = threading.Lock()

    def check(self, name: str) -> None:
        self._env(name)

    def reset(
        self, name: str, task_config: dict[str, Any] | None, action_space: str | None = None
    ) -> dict[str, Any]:
        env, lock = self._env(name)
        space = self.action_space if action_space is None else action_space
        if space not in ACTION_SPACES:
            raise BadAction(f"action_space={space!r}: choose {', '.join(ACTION_SPACES)}")
        with lock:
            env.action_space = space  # the agent's own, from this episode on
            return env.reset(task_config=task_config)

    def step(
        self, name: str, action: Any, pause: float
    ) -> tuple[dict[str, Any], float, bool, dict]:
        env, lock = self._env(name)
        with lock:
            return env.step(action, pause=pause)

    def evaluate(self, name: str) -> Outcome:
        env, lock = self._env(name)
        with lock:
            env.evaluate()
            assert env.last_outcome is not None  # kept by every evaluation that returns
            return env.last_outcome

    def _env(self, name: str) -> tuple[OSWorldDesktopEnv, threading.Lock]:
        with self._making:
            if name not in self._envs:
                self.pool.generation(name)  # an unknown environment raises here
                handle = LocalHandle(self.pool, name)
                env = OSWorldDesktopEnv(
                    handle,
                    action_space=self.action_space,
                    settings=self.settings,
                    require_a11y_tree=self.require_a11y_tree,
                )
                self._envs[name] = (env, threading.Lock())
            return self._envs[name]


def build_osworld_app(envs: OSWorldEnvs, key: str) -> Starlette:
    """The app over ``envs``, guarded by the harness ``key`` and each environment's."""

    def authorised(request: Request, env: str) -> bool:
        given = request.headers.get(KEY_HEADER, "").encode()
        return any(
            hmac.compare_digest(given, f"Bearer {k}".encode()) for k in (key, env_key(key, env))
        )

    async def body_of(request: Request) -> dict[str, Any]:
        raw = await request.body()
        if len(raw) > MAX_BODY_BYTES:
            raise BadAction(f"the body is over {MAX_BODY_BYTES} bytes")
        try:
            data = json.loads(raw or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise BadAction("the body is not JSON") from None
        if not isinstance(data, dict):
            raise BadAction("the body is a JSON object")
        return data

    async def call(request: Request, what: str) -> Response:
        name = request.path_params["env"]
        if not authorised(request, name):
            return _error(401, "unauthorised")
        if name == CANARY_ENV:
            return _error(403, "canary", detail="the canary takes no agent")
        try:
            body = await body_of(request)
            await run_in_threadpool(envs.check, name)

            def run() -> dict[str, Any]:
                if what == "reset":
                    task = body.get("task_config")
                    if task is not None and not isinstance(task, dict):
                        raise BadAction("task_config is an object or null")
                    space = body.get("action_space")
                    if space is not None and not isinstance(space, str):
                        raise BadAction("action_space is a string or null")
                    return {"observation": _observation_json(envs.reset(name, task, space))}
                if what == "step":
                    pause = body.get("pause", 2.0)
                    if isinstance(pause, bool) or not isinstance(pause, int | float):
                        raise BadAction("pause is a number of seconds")
                    if not 0 <= pause <= 60:
                        raise BadAction("pause is between 0 and 60 seconds")
                    obs, reward, done, info = envs.step(name, body.get("action"), pause)
                    return {
                        "observation": _observation_json(obs),
                        "reward": reward,
                        "done": done,
                        "info": info,
                    }
                outcome = envs.evaluate(name)
                return {"score": float(outcome.score or 0.0), "outcome": outcome.to_json()}

            return JSONResponse(await run_in_threadpool(run))
        except InvalidEvaluation as exc:
            return _error(409, "invalid", outcome=exc.outcome.to_json())
        except NoTask as exc:
            return _error(409, "no_task", detail=str(exc))
        except NotOpen as exc:
            return _error(503, "not_open", detail=str(exc))
        except NoEpisode as exc:
            return _error(409, "no_episode", detail=str(exc))
        except TaskFileError as exc:
            return _error(400, "bad_task", detail=str(exc))
        except StaleGeneration as exc:
            return _error(409, "stale_generation", detail=str(exc))
        except BadAction as exc:
            return _error(400, "bad_request", detail=str(exc))
        except UnknownEnvironment as exc:
            return _error(404, "unknown_environment", detail=str(exc))
        except PoolError as exc:
            return _error(503, "pool_error", detail=str(exc))
        except Exception as exc:  # a fault of cleanroom's: said, with its traceback logged
            log.exception("OSWorld interface: %s of %s failed", what, name)
            return _error(500, "internal", detail=f"{type(exc).__name__}: {exc}"[:500])

    async def reset(request: Request) -> Response:
        return await call(request, "reset")

    async def step(request: Request) -> Response:
        return await call(request, "step")

    async def evaluate(request: Request) -> Response:
        return await call(request, "evaluate")

    return Starlette(
        routes=[
            Route("/v1/osworld/{env}/reset", reset, methods=["POST"]),
            Route("/v1/osworld/{env}/step", step, methods=["POST"]),
            Route("/v1/osworld/{env}/evaluate", evaluate, methods=["POST"]),
        ]
    )


@contextlib.contextmanager
def serving(app: Starlette, port: int = 0, host: str = "127.0.0.1") -> Iterator[str]:
    """Run ``app`` on ``host``:``port`` (0: any free port) in a thread for the block;
    yields its base URL."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    config = uvicorn.Config(app, lifespan="off", access_log=False, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the OSWorld interface's server did not start")
            threading.Event().wait(0.05)
        shown = f"[{host}]" if ":" in host else host
        yield f"http://{shown}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


class OSWorldHTTPEnv:
    """`OSWorldDesktopEnv`'s methods over HTTP, for environment ``env`` with ``key``.
    Like it, it keeps the last evaluation's outcome: typed in ``last_outcome``, as a
    dict in ``last_eval_details``."""

    def __init__(
        self, url: str, env: str, key: str, *, timeout_s: float = 300.0, wait_s: float = 3600.0
    ) -> None:
        self.env = env
        self.wait_s = wait_s
        self.last_outcome: Outcome | None = None
        self.last_eval_details: dict[str, Any] | None = None
        self._client = httpx.Client(
            base_url=f"{url}/v1/osworld/{env}",
            headers={KEY_HEADER: f"Bearer {key}"},
            timeout=timeout_s,
            trust_env=False,
        )

    def reset(
        self, task_config: dict[str, Any] | None = None, action_space: str | None = None
    ) -> dict[str, Any]:
        """A fresh environment with ``task_config`` set up; its first observation. The
        episode's actions are of ``action_space`` (the interface's when None). In a run
        (`osworld_outside`) this waits for the harness's next rollout, retrying while the
        run answers ``not_open``, up to ``wait_s``."""
        deadline = time.monotonic() + self.wait_s
        body: dict[str, Any] = {"task_config": task_config}
        if action_space is not None:
            body["action_space"] = action_space
        while True:
            try:
                data = self._post("reset", body)
            except NotOpen:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(1.0)
                continue
            return _observation(data["observation"])

    def step(self, action: Any, pause: float = 2.0) -> tuple[dict[str, Any], float, bool, dict]:
        data = self._post("step", {"action": action, "pause": pause})
        return _observation(data["observation"]), data["reward"], data["done"], data["info"]

    def evaluate(self) -> float:
        """Cleanroom's score of the episode; `InvalidEvaluation` when the infrastructure
        kept it from being made. Either way the outcome is kept."""
        self._keep(None)
        try:
            data = self._post("evaluate", {})
        except InvalidEvaluation as exc:
            self._keep(exc.outcome)
            raise
        self._keep(Outcome.from_json(data["outcome"]))
        return float(data["score"])

    def _keep(self, outcome: Outcome | None) -> None:
        self.last_outcome = outcome
        self.last_eval_details = outcome.to_json() if outcome is not None else None

    def close(self) -> None:
        self._client.close()

    def _post(self, what: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self._client.post(f"/{what}", json=body)
        if response.status_code == 200:
            data: dict[str, Any] = response.json()
            return data
        try:
            error = response.json()
        except ValueError:
            error = {"error": "http", "detail": response.text[:500]}
        if not isinstance(error, dict):
            error = {"error": "http", "detail": str(error)[:500]}
        if error.get("error") == "invalid":
            raise InvalidEvaluation(Outcome.from_json(error["outcome"]))
        if error.get("error") == "not_open":
            raise NotOpen(str(error.get("detail")))
        if error.get("error") == "stale_generation":
            raise BadAction(f"stale: {error.get('detail')}")
        raise BadAction(f"{response.status_code} {error.get('error')}: {error.get('detail')}")


def _observation(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "screenshot": base64.b64decode(data["screenshot"])}


@dataclass(frozen=True)
class Connection:
    """What a run's connection file (`CONNECTION_FILE` in its run folder) tells outside
    agents: the interface's ``url``, each environment's own key, and, when the run serves
    OSWorld's in-VM server, its loopback address and the screens' size."""

    url: str
    keys: dict[str, str]
    vm_address: str | None = None
    screen: tuple[int, int] | None = None

    def vm_ip(self, env: str) -> str | None:
        """``env.vm_ip`` for ``env``: its name and key as the user and password of the
        in-VM server's address (`osworld_vm_server.vm_ip`)."""
        if self.vm_address is None:
            return None
        return f"{env}:{self.keys[env]}@{self.vm_address}"


def read_connection(connection_file: str | os.PathLike[str]) -> Connection:
    """The connection file a run writes for outside agents, read."""
    data = json.loads(Path(connection_file).read_text())
    screen = data.get("screen")
    return Connection(
        url=str(data["url"]),
        keys={str(name): str(key) for name, key in data["envs"].items()},
        vm_address=data.get("vm_address"),
        screen=(int(screen["width"]), int(screen["height"])) if screen else None,
    )


def connect(connection_file: str | os.PathLike[str], **client: Any) -> dict[str, OSWorldHTTPEnv]:
    """A client per environment from the connection file a run writes for outside agents
    (`CONNECTION_FILE` in its run folder)."""
    c = read_connection(connection_file)
    return {name: OSWorldHTTPEnv(c.url, name, key, **client) for name, key in c.keys.items()}
