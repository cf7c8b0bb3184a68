"""A sandbox on its own (no display): what its user can and cannot reach, a forwarded
port, and that stopping it ends everything in it."""

from __future__ import annotations

import http.server
import os
import pwd
import secrets
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.environments.session.processes import alive, pids_of_uid
from cleanroom.environments.session.sandbox import Sandbox, SandboxLayout
from cleanroom.lifecycle import wait_until

Boxed = tuple[Sandbox, Path, pwd.struct_passwd]
FETCH = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=3).status)"


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Boxed]:
    if os.geteuid() != 0:
        pytest.fail("sandboxes are made by root")
    user = f"crsbx{secrets.token_hex(3)}"
    subprocess.run(["useradd", "-M", "-U", user], check=True)
    account = pwd.getpwnam(user)
    root = Path("/var/lib/cleanroom/test-sandbox") / user
    homes, runs = root / "homes", root / "run"
    for folder in (homes / "mine", homes / "theirs", runs / "mine"):
        folder.mkdir(parents=True)
        os.chown(folder, account.pw_uid, account.pw_gid)
    (homes / "theirs" / "secret").write_text("theirs")
    layout = SandboxLayout(
        writable=(homes / "mine", runs / "mine"), hidden=(homes, runs), display_number=None
    )
    box = Sandbox.start("test", layout, tmp_path / "sandbox.log")
    try:
        yield box, homes, account
    finally:
        box.stop()
        subprocess.run(["userdel", user], check=False)
        shutil.rmtree(root, ignore_errors=True)


def _run(box: Sandbox, account: pwd.struct_passwd, script: str, cwd: Path) -> tuple[int, str]:
    argv = box.command(["sh", "-c", script], account.pw_uid, account.pw_gid, cwd)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_only_the_own_places_and_private_tmp_are_writable(sandbox: Boxed) -> None:
    box, homes, account = sandbox
    code, out = _run(
        box, account, "touch ok /tmp/x /var/tmp/x /dev/shm/x && echo wrote", homes / "mine"
    )
    assert code == 0 and "wrote" in out, out
    for target in ("/opt/cleanroom-x", "/etc/cleanroom-x", "/var/lib/cleanroom-x"):
        code, out = _run(box, account, f"touch {target}", homes / "mine")
        assert code != 0 and not Path(target).exists(), out
    assert not Path("/tmp/x").exists() or Path("/tmp/x").stat().st_uid != account.pw_uid


def test_other_homes_are_not_there_and_only_the_sandboxs_processes_are(sandbox: Boxed) -> None:
    box, homes, account = sandbox
    _, out = _run(box, account, f"ls -a {homes}; cat /proc/[0-9]*/comm", homes / "mine")
    assert "theirs" not in out and "mine" in out
    assert "pytest" not in out and "python" in out  # the sandbox's first process only


def test_a_forwarded_port_reaches_the_host_server_and_nothing_else_does(sandbox: Boxed) -> None:
    box, homes, account = sandbox
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    for s in (server, other):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/"
        code, out = _run(box, account, f"python3 -I -c '{FETCH}' {url}", homes / "mine")
        assert code != 0, "reached the host before anything was forwarded"
        box.forward_port(server.server_port)
        code, out = _run(box, account, f"python3 -I -c '{FETCH}' {url}", homes / "mine")
        assert code == 0 and "200" in out, out
        other_url = f"http://127.0.0.1:{other.server_port}/"
        code, out = _run(box, account, f"python3 -I -c '{FETCH}' {other_url}", homes / "mine")
        assert code != 0, out
    finally:
        server.shutdown()  # handler threads are daemons: an idle preconnect cannot hold it
        server.server_close()
        other.shutdown()


def test_stopping_the_sandbox_ends_everything_in_it(sandbox: Boxed) -> None:
    box, homes, account = sandbox
    argv = box.command(
        ["sh", "-c", "sleep 300 & sleep 300"], account.pw_uid, account.pw_gid, homes / "mine"
    )
    subprocess.Popen(argv, start_new_session=True)

    assert wait_until(lambda: len(pids_of_uid(account.pw_uid)) >= 2, 5)
    box.stop()
    assert not alive(box.init_pid)
    assert wait_until(lambda: pids_of_uid(account.pw_uid) == [], 5)
