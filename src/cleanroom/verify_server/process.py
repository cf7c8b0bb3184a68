"""Starting and stopping a verify server as a separate process (for harnesses and tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx

from cleanroom.store.folders import private_folder
from cleanroom.verify_server.client import VerifyClient


class ServerStartError(RuntimeError):
    """The server process exited or did not become healthy in time."""


class VerifyServerProcess:
    """A ``python -m cleanroom.verify_server`` child process on a free loopback port."""

    def __init__(
        self, proc: subprocess.Popen[bytes], url: str, key: str, db: Path, log: Path
    ) -> None:
        self.proc = proc
        self.url = url
        self.key = key
        self.db = db
        self.log = log

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
    ) -> VerifyServerProcess:
        """Start a server keeping its database, key, port file and log in ``workdir``;
        return once it answers its health check."""
        work = private_folder(workdir)
        db_path = Path(db) if db is not None else work / "verify.sqlite3"
        key_file, port_file, log = work / "verify.key", work / "verify.port", work / "verify.log"
        port_file.unlink(missing_ok=True)
        argv = [
            sys.executable, "-m", "cleanroom.verify_server",
            "--host", host, "--port", "0", "--db", str(db_path),
            "--key-file", str(key_file), "--port-file", str(port_file),
        ]  # fmt: skip
        with open(log, "ab") as log_fh:
            proc = subprocess.Popen(argv, stdout=log_fh, stderr=subprocess.STDOUT)
        try:
            return cls._await(proc, host, port_file, key_file, db_path, log, timeout_s)
        except BaseException:
            # Whatever stopped the wait (no port, a stop signal, Ctrl-C), the child goes too.
            _stop(proc, 2.0)
            raise

    @classmethod
    def _await(
        cls,
        proc: subprocess.Popen[bytes],
        host: str,
        port_file: Path,
        key_file: Path,
        db_path: Path,
        log: Path,
        timeout_s: float,
    ) -> VerifyServerProcess:
        deadline = time.monotonic() + timeout_s
        port = None
        while port is None:
            if proc.poll() is not None:
                raise ServerStartError(f"verify server exited with {proc.returncode}: {_tail(log)}")
            if time.monotonic() > deadline:
                raise ServerStartError(f"verify server did not start in {timeout_s}s: {_tail(log)}")
            text = port_file.read_text() if port_file.exists() else ""
            if text.strip():
                port = int(text)
            else:
                time.sleep(0.02)
        url = f"http://{host}:{port}"
        server = cls(proc, url, key_file.read_text().strip(), db_path, log)
        server._wait_healthy(deadline)
        return server

    def _wait_healthy(self, deadline: float) -> None:
        while True:
            try:
                if httpx.get(f"{self.url}/v1/healthz", timeout=2.0, trust_env=False).is_success:
                    return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise ServerStartError(f"verify server never became healthy: {_tail(self.log)}")
            time.sleep(0.02)

    def client(self, *, timeout: float = 5.0) -> VerifyClient:
        """A harness client for this server."""
        return VerifyClient(self.url, self.key, timeout=timeout)

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """Kill the process outright (SIGKILL), as a crash would."""
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the process gracefully (SIGTERM), killing it if it does not exit in time."""
        _stop(self.proc, timeout_s)

    def __enter__(self) -> VerifyServerProcess:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _stop(proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _tail(log: Path, size: int = 2000) -> str:
    try:
        return log.read_text(errors="replace")[-size:]
    except OSError:
        return "(no log)"
