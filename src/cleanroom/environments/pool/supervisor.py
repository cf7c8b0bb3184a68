"""The supervisor: a detached process that owns a pool for as long as the run needs it.

``cleanroom envs up`` starts it (`PoolProcess.start`); it creates the environments,
runs the watchdog, serves the policy HTTP API on loopback and writes environments and
generations to the run database. Its files in the run folder:

    pool.json      state, pid, url, environments (written when ready, updated on stop)
    harness.key    the key for reset and admin routes (0600)
    actions.jsonl  every action, applied or refused
    supervisor.log its own log

``python -m cleanroom.environments.pool.supervisor --run DIR ...`` is the process itself.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from cleanroom.environments.errors import PoolError, StartError
from cleanroom.environments.leaky_setups import Leak, parse_leak
from cleanroom.environments.pool.plan import DEFAULT_ROOT, PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.session.processes import alive, kill_pids
from cleanroom.environments.watchdog import Watchdog
from cleanroom.lifecycle import ChildService, wait_until
from cleanroom.store.folders import private_folder
from cleanroom.store.rundb import DB_NAME, RunStore

STATE_FILE = "pool.json"
KEY_FILE = "harness.key"
LOG_FILE = "supervisor.log"
POINTER_ENV = "CLEANROOM_POOL_POINTER"
_DEFAULT_POINTER = Path.home() / ".local" / "state" / "cleanroom" / "current-pool"


class NoPool(PoolError):
    """No running pool was found where one was expected."""


def pointer_file() -> Path:
    """Where the run folder of the most recently started pool is remembered."""
    return Path(os.environ.get(POINTER_ENV) or _DEFAULT_POINTER)


def current_run_dir() -> Path:
    """The run folder of the most recently started pool; `NoPool` if there is none."""
    pointer = pointer_file()
    if not pointer.exists():
        raise NoPool("no pool has been started here; run `cleanroom envs up` or pass --run")
    return Path(pointer.read_text().strip())


def read_state(run_dir: Path) -> dict[str, Any]:
    """The supervisor's state file; `NoPool` if it is missing or unreadable."""
    try:
        data: dict[str, Any] = json.loads((run_dir / STATE_FILE).read_text())
    except (OSError, ValueError) as exc:
        raise NoPool(f"{run_dir} has no readable {STATE_FILE}: {exc}") from exc
    return data


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    tmp.replace(path)  # readers never see half a file


# -- the supervisor process --------------------------------------------------------------

PROGRESS = logging.getLogger("cleanroom.progress")
# The most progress lines the state file keeps while the pool starts.
_PROGRESS_KEPT = 64


class _ProgressToState(logging.Handler):
    """Appends each progress line of the start to the state file's ``progress`` list, which
    the process that waits for the pool (`PoolProcess.start`) shows as it comes."""

    def __init__(self, path: Path, state: dict[str, Any]) -> None:
        super().__init__(logging.INFO)
        self.path = path
        self.state = state

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # progress is never worth a failed start
            lines = [*self.state.get("progress", []), record.getMessage()][-_PROGRESS_KEPT:]
            self.state["progress"] = lines
            self.state["progress_seen"] = self.state.get("progress_seen", 0) + 1
            _write_json(self.path, self.state)


def _serve(
    run: Path,
    envs: int,
    programs: str,
    root: Path,
    containers: bool,
    leak: str,
    warm_standby: bool = False,
    gvisor: bool = False,
) -> int:
    import uvicorn

    from cleanroom.environments.policy.http import build_app

    run_dir = private_folder(run.resolve())
    logging.basicConfig(
        filename=run_dir / LOG_FILE,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    log = logging.getLogger("supervisor")
    store = RunStore.open(run_dir) if (run_dir / DB_NAME).exists() else RunStore.create(run_dir)
    config = PoolConfig(
        envs=envs,
        programs=tuple(programs.split(",")) if programs else PoolConfig().programs,
        root=root,
        containers=containers,
        leak=parse_leak(leak),
        warm_standby=warm_standby,
        gvisor=gvisor,
    )
    pool = Pool(config, run_dir, store)
    # The pool's id and folder are written first, so `envs down` can find what a dead
    # supervisor left.
    state: dict[str, Any] = {
        "state": "starting",
        "pid": os.getpid(),
        "run_dir": str(run_dir),
        "pool_id": pool.pool_id,
        "root": str(pool.root),
        # A leaky pool removes one protection on purpose: never one for a real run.
        "leak": config.leak.value if config.leak else None,
    }
    _write_json(run_dir / STATE_FILE, state)
    said = _ProgressToState(run_dir / STATE_FILE, state)
    PROGRESS.addHandler(said)
    watchdog: Watchdog | None = None
    try:
        pool.start()
        PROGRESS.removeHandler(said)
        key = secrets.token_urlsafe(32)
        key_path = run_dir / KEY_FILE
        key_path.touch(mode=0o600)
        key_path.chmod(0o600)
        key_path.write_text(key)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        # Listening before "ready" is written: a client that reads the state file may
        # connect at once (the kernel queues it until the server accepts).
        sock.listen(128)
        server: Any = None

        def shutdown() -> None:
            if server is not None:
                server.should_exit = True

        app = build_app(pool, key, shutdown)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        watchdog = Watchdog(pool)
        watchdog.start()
        state.update(
            state="ready",
            url=f"http://127.0.0.1:{port}",
            port=port,
            pool_id=pool.pool_id,
            envs=pool.names,
            users={n: pool.env(n).account.user for n in pool.names},
        )
        _write_json(run_dir / STATE_FILE, state)
        log.info("pool %s ready on port %d with %s", pool.pool_id, port, pool.names)
        server.run(sockets=[sock])  # returns on shutdown route or SIGTERM/SIGINT
        return 0
    except Exception as exc:
        log.exception("supervisor failed")
        state.update(state="failed", error=str(exc))
        _write_json(run_dir / STATE_FILE, state)
        return 1
    finally:
        if watchdog is not None:
            watchdog.stop()
        pool.stop()
        if state.get("state") != "failed":
            state["state"] = "stopped"
        state["stopped_at"] = time.time()
        _write_json(run_dir / STATE_FILE, state)
        (run_dir / KEY_FILE).unlink(missing_ok=True)
        store.close()
        log.info("pool stopped")


def main(
    run: Annotated[Path, typer.Option("--run", help="The run folder.")],
    envs: Annotated[int, typer.Option("--envs", help="Environments besides the canary.")] = 3,
    programs: Annotated[
        str, typer.Option("--programs", help="Programs each environment runs.")
    ] = "",
    root: Annotated[
        Path, typer.Option("--root", help="Where pools keep their files.")
    ] = DEFAULT_ROOT,
    containers: Annotated[
        bool, typer.Option("--containers", help="Programs in containers.")
    ] = False,
    leak: Annotated[str, typer.Option("--leak", help="A leak kind (shared-display, ...).")] = "",
    warm_standby: Annotated[
        bool, typer.Option("--warm-standby", help="A spare slot per env.")
    ] = False,
    gvisor: Annotated[bool, typer.Option("--gvisor", help="A kernel per sandbox.")] = False,
) -> None:
    """Entry point of the supervisor process."""
    # SIGTERM ends the server loop the same way the shutdown route does.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    raise typer.Exit(_serve(run, envs, programs, root, containers, leak, warm_standby, gvisor))


# -- the harness side --------------------------------------------------------------------


@dataclass
class PoolProcess:
    """A running supervisor as seen from the harness: its run folder, URL, key and pid."""

    run_dir: Path
    url: str
    key: str
    pid: int

    @classmethod
    def start(
        cls,
        run_dir: Path,
        *,
        envs: int = 3,
        programs: tuple[str, ...] | None = None,
        root: Path | None = None,
        containers: bool = False,
        leak: Leak | None = None,
        warm_standby: bool = False,
        gvisor: bool = False,
        timeout_s: float = 180.0,
        on_progress: Callable[[str], None] | None = None,
    ) -> PoolProcess:
        """Start a detached supervisor and return once its pool is ready; with ``leak``,
        a leaky pool (one protection removed between env01 and env02 on purpose).
        ``on_progress`` is called with each line the start says (an environment ready)."""
        run_dir = private_folder(run_dir.resolve())
        (run_dir / STATE_FILE).unlink(missing_ok=True)
        argv = [
            sys.executable, "-m", "cleanroom.environments.pool.supervisor",
            "--run", str(run_dir), "--envs", str(envs),
            "--root", str(root or DEFAULT_ROOT),
        ]  # fmt: skip
        if programs:
            argv += ["--programs", ",".join(programs)]
        if containers:
            argv.append("--containers")
        if leak is not None:
            argv += ["--leak", Leak(leak).value]
        if warm_standby:
            argv.append("--warm-standby")
        if gvisor:
            argv.append("--gvisor")
        child = ChildService.spawn("the pool's supervisor", argv, run_dir / LOG_FILE, detached=True)

        told = 0

        def settled() -> dict[str, Any] | None:
            nonlocal told
            state: dict[str, Any] = {}
            with contextlib.suppress(NoPool):
                state = read_state(run_dir)
            if on_progress is not None:
                lines, seen = state.get("progress", []), int(state.get("progress_seen", 0))
                for line in lines[max(0, len(lines) - (seen - told)) :] if seen > told else []:
                    on_progress(str(line))
                told = max(told, seen)
            return state if state.get("state") in ("ready", "failed") else None

        state = child.wait_ready(settled, timeout_s, StartError, poll_s=0.1, stop_grace_s=120.0)
        if state["state"] == "failed":
            child.proc.wait(timeout=120)  # it removes what it made before it exits
            raise StartError(f"the pool did not start: {state.get('error') or child.tail()}")
        pointer = pointer_file()
        pointer.parent.mkdir(parents=True, exist_ok=True)
        pointer.write_text(str(run_dir))
        return cls.connect(run_dir)

    @classmethod
    def connect(cls, run_dir: Path | None = None) -> PoolProcess:
        """The running pool of ``run_dir`` (default: the most recently started one)."""
        run_dir = (run_dir or current_run_dir()).resolve()
        state = read_state(run_dir)
        if state.get("state") != "ready" or not alive(int(state.get("pid", 0))):
            raise NoPool(f"the pool of {run_dir} is not running (state {state.get('state')})")
        try:
            key = (run_dir / KEY_FILE).read_text().strip()
        except OSError as exc:
            raise NoPool(f"cannot read the harness key of {run_dir}: {exc}") from exc
        return cls(run_dir, str(state["url"]), key, int(state["pid"]))

    def client(self) -> Any:
        """A `PoolClient` holding the harness key."""
        from cleanroom.environments.policy.http import PoolClient

        return PoolClient(self.url, self.key)

    def stop(self, timeout_s: float = 120.0) -> None:
        """Ask the supervisor to stop everything and wait until its process is gone."""
        from cleanroom.environments.policy.http import PoolUnavailable

        client = self.client()
        try:
            client.shutdown()
        except PoolUnavailable:
            kill_pids([self.pid], grace_s=timeout_s)  # not answering: end it by its pid
        finally:
            client.close()
        if not wait_until(lambda: not alive(self.pid), timeout_s, 0.1):
            kill_pids([self.pid], grace_s=5.0)


if __name__ == "__main__":
    typer.run(main)
