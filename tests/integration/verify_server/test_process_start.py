"""Starting the verify server's process: a start that is interrupted leaves no child."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

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

    def interrupted(*_args: Any) -> VerifyServerProcess:
        raise KeyboardInterrupt  # what the harness's SIGINT handler raises mid-wait

    monkeypatch.setattr(server_process.subprocess, "Popen", recording_popen)
    monkeypatch.setattr(VerifyServerProcess, "_await", interrupted)
    with pytest.raises(KeyboardInterrupt):
        VerifyServerProcess.start(tmp_path / "server")
    [child] = started
    assert child.poll() is not None, "the server's process outlived the interrupted start"
