"""Starting the verify server's process: a start that is interrupted leaves no child, and
a server outlives neither a clean stop nor a SIGKILL of the process that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from cleanroom import lifecycle
from cleanroom.environments.session.processes import alive
from cleanroom.lifecycle import wait_until
from cleanroom.verify_server import process as server_process
from cleanroom.verify_server.process import VerifyServerProcess


def test_a_stop_signal_during_the_start_takes_the_child_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def recording_popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        return proc

    def interrupted(*_args: Any, **_kwargs: Any) -> httpx.Response:
        raise KeyboardInterrupt  # what the harness's SIGINT handler raises mid-wait

    monkeypatch.setattr(lifecycle.subprocess, "Popen", recording_popen)
    monkeypatch.setattr(server_process.httpx, "get", interrupted)
    with pytest.raises(KeyboardInterrupt):
        VerifyServerProcess.start(tmp_path / "server")
    [child] = started
    assert child.poll() is not None, "the server's process outlived the interrupted start"


# A throwaway owner: starts a verify server, prints its pid, then waits to be killed.
_OWNER = textwrap.dedent(
    """
    import sys, time
    from cleanroom.verify_server.process import VerifyServerProcess

    server = VerifyServerProcess.start(sys.argv[1])
    print(server.pid, flush=True)
    time.sleep(600)
    """
)


def test_the_server_dies_with_the_run_that_started_it(tmp_path: Path) -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(tmp_path / "server")],
        stdout=subprocess.PIPE,
        text=True,
    )
    server_pid = 0
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()
        assert line.strip().isdigit(), f"the owner did not start a server: {line!r}"
        server_pid = int(line)
        assert alive(server_pid)
        os.kill(owner.pid, signal.SIGKILL)  # the run dies without any clean-up
        owner.wait()
        assert wait_until(lambda: not alive(server_pid), 5.0, 0.1), (
            "the verify server outlived the run that started it"
        )
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if server_pid and alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)
