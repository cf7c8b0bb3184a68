"""``cleanroom serve``: creates its key, picks a free port, publishes it, serves."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import httpx

from cleanroom.lifecycle import wait_until

CLI = [sys.executable, "-c", "from cleanroom.cli import main; main()", "serve"]


def start(tmp_path: Path) -> subprocess.Popen[str]:
    argv = [
        *CLI,
        "--port", "0",
        "--db", str(tmp_path / "v.sqlite3"),
        "--key-file", str(tmp_path / "v.key"),
        "--port-file", str(tmp_path / "v.port"),
    ]  # fmt: skip
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_port(tmp_path: Path, proc: subprocess.Popen[str]) -> int:
    def port() -> int | None:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        text = (tmp_path / "v.port").read_text() if (tmp_path / "v.port").exists() else ""
        return int(text) if text.strip() else None

    found = wait_until(port, 15, 0.02)
    assert found is not None, "no port file"
    return found


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    out, _ = proc.communicate(timeout=10)
    return out


def test_serve_creates_a_private_key_and_publishes_a_free_port(tmp_path: Path) -> None:
    proc = start(tmp_path)
    try:
        port = wait_port(tmp_path, proc)
        assert httpx.get(f"http://127.0.0.1:{port}/v1/healthz", trust_env=False).json() == {
            "ok": True
        }
        key = (tmp_path / "v.key").read_text().strip()
        assert stat.S_IMODE((tmp_path / "v.key").stat().st_mode) == 0o600
        assert len(key) >= 32
        lease = httpx.post(
            f"http://127.0.0.1:{port}/v1/leases",
            json={
                "env": "env01",
                "rollout_id": "env01-w001-r0001",
                "token": "env01-w001-r0001-0123abcd",
                "window": 1,
                "ttl_s": 60,
            },
            headers={"Authorization": f"Bearer {key}"},
            trust_env=False,
        )
        assert lease.status_code == 201
    finally:
        out = stop(proc)
    assert f":{port}" in out
    assert proc.returncode == 0  # SIGTERM is a clean stop


def test_serve_reuses_an_existing_key(tmp_path: Path) -> None:
    (tmp_path / "v.key").write_text("an-existing-harness-key-0123456789abcdef\n")
    proc = start(tmp_path)
    try:
        port = wait_port(tmp_path, proc)
        response = httpx.get(
            f"http://127.0.0.1:{port}/v1/audit?window=1",
            headers={"Authorization": "Bearer an-existing-harness-key-0123456789abcdef"},
            trust_env=False,
        )
        assert response.status_code == 200
    finally:
        stop(proc)
    assert (tmp_path / "v.key").read_text() == "an-existing-harness-key-0123456789abcdef\n"
