"""From inside env01, as its user and where its programs run, each route to env02, the
canary and the harness that an open host had is closed: in plain mode (the sandbox) and
in containers mode.

The eight routes: su to another environment's user; sudo mkdir anywhere; one System V
IPC namespace; one loopback; a readable run folder; the control plane on the host's
loopback; shared temporary folders; process listings.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from Xlib import display as xdisplay

from cleanroom.environments.pool.environment import DesktopEnvironment
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.session.processes import kill_pids, process_tree
from cleanroom.environments.x11.display import server_user
from cleanroom.environments.x11.screen import client_pid
from cleanroom.lifecycle import wait_until

from .conftest import require_desktop_stack
from .test_containers_mode import require_docker

MARK = "cleanroom-route-marker"
PORT = 47_990


@pytest.fixture(scope="module", params=["plain", "containers"])
def pool(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pool]:
    require_desktop_stack()
    containers = request.param == "containers"
    if containers:
        require_docker().close()
    run_dir = tmp_path_factory.mktemp(f"routes-{request.param}")
    p = Pool(PoolConfig(envs=2, programs=("terminal",), containers=containers), run_dir)
    p.start()
    try:
        yield p
    finally:
        p.stop()


def _sh(env: DesktopEnvironment, script: str, timeout_s: float = 30.0) -> tuple[int, str]:
    return env.run_inside(["sh", "-c", script], timeout_s)


def _py(env: DesktopEnvironment, code: str) -> tuple[int, str]:
    return env.run_inside([env.python, "-I", "-c", code], 30.0)


def test_su_to_another_environments_user_fails(pool: Pool) -> None:
    env01, env02 = pool.env("env01"), pool.env("env02")
    target = env02.account.home / MARK
    code = f"""
import os, pty, select, time
pid, fd = pty.fork()
if pid == 0:
    try:
        os.execvp("su", ["su", "-c", "touch {target}", "{env02.account.user}"])
    finally:
        os._exit(127)
end = time.monotonic() + 5
while time.monotonic() < end:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            if b"assword" in os.read(fd, 512):
                os.write(fd, b"password\\n")
        except OSError:
            break
    if os.waitpid(pid, os.WNOHANG)[0]:
        break
"""
    _py(env01, code)
    assert not target.exists()
    shadow = {
        line.split(":")[0]: line.split(":")[1]
        for line in Path("/etc/shadow").read_text().splitlines()
    }
    assert shadow[env02.account.user].startswith("!"), "the account has a usable password"


def test_sudo_mkdir_reaches_neither_another_home_nor_the_system(pool: Pool) -> None:
    env01 = pool.env("env01")
    targets = [
        pool.env("env02").account.home / MARK,
        pool.env("env00").account.home / MARK,
        Path("/etc") / MARK,
    ]
    for target in targets:
        _sh(env01, f"sudo -n mkdir -p {shlex.quote(str(target))}")
        assert not target.exists(), target
    # The route a task's setup needs still works where it belongs (plain mode has sudo).
    if env01.container is None:
        own = env01.account.home / "Desktop" / MARK
        code, out = _sh(env01, f"echo password | sudo -S mkdir -p {shlex.quote(str(own))}")
        assert code == 0 and own.is_dir(), out


def test_system_v_ipc_objects_are_not_shared(pool: Pool) -> None:
    make = (
        "import ctypes; libc = ctypes.CDLL(None);"
        "print(libc.shmget(0x4352FFEE, 4096, 0o1666), libc.msgget(0x4352FFEE, 0o1666))"
    )
    code, out = _py(pool.env("env02"), make)
    assert code == 0 and "-1" not in out.split(), out
    for reader in ("env01", "env00"):
        code, listing = _sh(pool.env(reader), "cat /proc/sysvipc/shm /proc/sysvipc/msg")
        assert code == 0 and str(0x4352FFEE) not in listing, (reader, listing)


def test_a_loopback_server_in_one_environment_is_unreachable_from_another(pool: Pool) -> None:
    env02 = pool.env("env02")
    server, _ = env02.start_inside(
        [env02.python, "-I", "-m", "http.server", str(PORT), "--bind", "127.0.0.1"], "route-server"
    )
    try:
        probe = (
            "import socket, time\n"
            "for _ in range(50):\n"
            "    try:\n"
            f"        socket.create_connection(('127.0.0.1', {PORT}), timeout=1).close()\n"
            "        print('reached'); break\n"
            "    except OSError:\n"
            "        time.sleep(0.1)\n"
            "else:\n"
            "    print('refused')\n"
        )
        assert _py(env02, probe)[1].strip() == "reached"  # the server is up
        assert _py(pool.env("env01"), probe)[1].strip() == "refused"
        assert _py(pool.env("env00"), probe)[1].strip() == "refused"
    finally:
        kill_pids(process_tree(server.pid), grace_s=0.5)


def test_the_run_folder_and_host_loopback_services_are_out_of_reach(pool: Pool) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[object] = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    try:
        env01 = pool.env("env01")
        code, out = _sh(env01, f"ls {shlex.quote(str(pool.run_dir))}")
        assert code != 0, out
        reach = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
        code, out = _py(env01, reach)
        assert code != 0 and not accepted, out
    finally:
        listener.close()
    assert pool.run_dir.stat().st_mode & 0o077 == 0


def test_temporary_folders_are_private(pool: Pool) -> None:
    env02 = pool.env("env02")
    folders = ("/tmp", "/var/tmp", "/dev/shm")
    write = " && ".join(f"echo {MARK} > {d}/{MARK}" for d in folders)
    code, out = _sh(env02, write)
    assert code == 0, out
    for reader in ("env01", "env00"):
        code, listing = _sh(pool.env(reader), f"ls -a {' '.join(folders)}")
        assert MARK not in listing, (reader, listing)
    for d in folders:
        assert not (Path(d) / MARK).exists(), f"{d} on the host holds env02's file"


def test_process_listings_show_only_the_environments_own(pool: Pool) -> None:
    env02 = pool.env("env02")
    sleeper, _ = env02.start_inside(
        [env02.python, "-I", "-c", "import time; time.sleep(120)", MARK], "route-sleeper"
    )
    try:
        # `runc exec` returns before the sleeper's own program runs: look until it does.
        listed = {"env02": ""}

        def listed_by_env02() -> bool:
            listed["env02"] = _sh(env02, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")[1]
            return MARK in listed["env02"]

        assert wait_until(listed_by_env02, 10, 0.2), listed["env02"]
        for reader in ("env01", "env00"):
            _, theirs = _sh(pool.env(reader), "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
            assert MARK not in theirs, reader
    finally:
        kill_pids(process_tree(sleeper.pid), grace_s=0.2)


def test_a_full_home_or_runtime_folder_fills_only_its_own_file_system(pool: Pool) -> None:
    # Each is a sized tmpfs of the environment's own: writing past it stops at its size
    # (ENOSPC) and leaves the pool's folders, the run folder's among them, as they were.
    env01 = pool.env("env01")
    limits = pool.limits_for("env01")
    run_free = shutil.disk_usage(pool.run_dir).free
    for folder, size_mib in (
        (env01.account.home, limits.home_mib),
        (env01.live.session.runtime_dir, limits.tmpfs_mib),
    ):
        assert os.path.ismount(folder), folder
        fill = folder / MARK
        code, out = _sh(env01, f"dd if=/dev/zero of={fill} bs=1M count={size_mib + 64} 2>&1", 120.0)
        assert code != 0 and "No space left" in out, out
        assert fill.stat().st_size <= size_mib << 20
        _sh(env01, f"rm -f {fill}")
    assert shutil.disk_usage(pool.run_dir).free > run_free - (64 << 20)


def test_each_displays_server_runs_in_a_sandbox_of_its_own_as_a_user_of_its_own(
    pool: Pool,
) -> None:
    # An X server reads any folder a client names as a font path: sandboxed, it has none
    # of the pool's homes in view, not even its own environment's. Each runs as a user
    # no other server or environment is.
    uids = set()
    for name in pool.names:
        display = pool.env(name).live.display
        assert display.sandbox is not None, name
        leader = display.proc.group_leader()  # type: ignore[attr-defined]
        assert leader
        uid = Path(f"/proc/{leader}").stat().st_uid
        assert uid == pwd.getpwnam(server_user(pool.env(name).account.user)).pw_uid, name
        uids.add(uid)
        root = Path(f"/proc/{leader}/root")
        homes = pool.root / "homes"
        assert list((root / str(homes).lstrip("/")).iterdir()) == [], name
    assert len(uids) == len(pool.names)
    assert not uids & ({pool.env(n).account.uid for n in pool.names} | {0})
    # It still names each client by its host pid (X-Resource), as the harness needs to
    # tell whose window is whose on a display two environments share.
    env01 = pool.env("env01")
    x = xdisplay.Display(env01.live.display.name)
    try:
        pids = [client_pid(x, w.id) for w in env01.windows()]
    finally:
        x.close()
    assert pids and all(p and Path(f"/proc/{p}").stat().st_uid == env01.account.uid for p in pids)


def test_every_sandbox_is_in_the_environments_group_with_its_budget(pool: Pool) -> None:
    # The group weighs as one harness task and may take the machine less the harness's
    # reserve; each environment's sandbox, its display's and its container are inside.
    group = pool.describe()["environments_group"]
    assert group["cpu_shares"] == 1024 and group["memory_mib"] > 0, group
    for name in pool.names:
        env = pool.env(name)
        assert env.live.display.sandbox is not None
        leader = env.live.display.proc.group_leader()  # type: ignore[attr-defined]
        cgroups = Path(f"/proc/{leader}/cgroup").read_text()
        assert ":cpu:/cleanroom/" in cgroups or ":cpu,cpuacct:/cleanroom/" in cgroups, cgroups
