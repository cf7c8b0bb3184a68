"""Starting and stopping a verify server as a child process (for harnesses and tests)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import TracebackType

import httpx

from cleanroom.lifecycle import ChildService
from cleanroom.store.folders import private_folder
from cleanroom.verify_server.budget import LeaseBudget
from cleanroom.verify_server.client import VerifyClient


class ServerStartError(RuntimeError):
    """The server process exited or did not become healthy in time."""


class VerifyServerProcess:
    """A ``python -m cleanroom.verify_server`` child process on a free loopback port; it
    dies with the process that started it."""

    def __init__(self, child: ChildService, url: str, key: str, db: Path) -> None:
        self.child = child
        self.url = url
        self.key = key
        self.db = db

    @property
    def pid(self) -> int:
        """The server's pid."""
        return self.child.pid

    @property
    def log(self) -> Path:
        """The server's log file."""
        return self.child.log

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self.url.rsplit(":", 1)[1])

    @classmethod
    def start(
        cls,
        workdir: str | os.PathLike[str],
        *,
        db: str | os.PathLike[str] | None = None,
        host: str = "127.0.0.1",
        timeout_s: float = 20.0,
        lease_budget: LeaseBudget | None = None,
    ) -> VerifyServerProcess:
        """Start a server keeping its database, key, port file and log in ``workdir``;
        return once it answers its health check. The server ends with the thread that
        starts it (the kernel's parent-death signal follows that thread), so start it
        from one that lives as long as the server is needed. ``lease_budget`` overrides
        the submissions one lease may make (a load test floods one lease)."""
        work = private_folder(workdir)
        db_path = Path(db) if db is not None else work / "verify.sqlite3"
        key_file, port_file = work / "verify.key", work / "verify.port"
        port_file.unlink(missing_ok=True)
        argv = [
            sys.executable, "-m", "cleanroom.verify_server",
            "--host", host, "--port", "0", "--db", str(db_path),
            "--key-file", str(key_file), "--port-file", str(port_file),
        ]  # fmt: skip
        if lease_budget is not None:
            argv += ["--lease-submissions", str(lease_budget.submissions)]
            argv += ["--lease-bytes", str(lease_budget.nbytes)]
        child = ChildService.spawn("verify server", argv, work / "verify.log", detached=False)

        def healthy_url() -> str | None:
            text = port_file.read_text() if port_file.exists() else ""
            if not text.strip():
                return None
            url = f"http://{host}:{int(text)}"
            try:
                if httpx.get(f"{url}/v1/healthz", timeout=2.0, trust_env=False).is_success:
                    return url
            except httpx.TransportError:
                pass
            return None

        url = child.wait_ready(healthy_url, timeout_s, ServerStartError, stop_grace_s=2.0)
        return cls(child, url, key_file.read_text().strip(), db_path)

    def client(self, *, timeout: float = 5.0) -> VerifyClient:
        """A harness client for this server."""
        return VerifyClient(self.url, self.key, timeout=timeout)

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.child.alive()

    def kill(self) -> None:
        """Kill the process outright (SIGKILL), as a crash would."""
        self.child.kill()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the process gracefully (SIGTERM), killing it if it does not exit in time."""
        self.child.stop(timeout_s)

    def __enter__(self) -> VerifyServerProcess:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
