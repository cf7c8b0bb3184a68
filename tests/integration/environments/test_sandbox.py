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
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cleanroom.environments.session.keyrings import clear_keyrings
from cleanroom.environments.session.processes import alive, pids_of_uid
from cleanroom.environments.session.sandbox import (
    Entry,
    Sandbox,
    SandboxedProcess,
    runtime_environment,
)
from cleanroom.environments.session.sandbox_spec import (
    SandboxLayout,
    SandboxLimits,
    SandboxProtections,
)
from cleanroom.lifecycle import stop_group, wait_until

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
    box = Sandbox.start("test", layout, tmp_path / "sandbox.log", owner=user)
    try:
        yield box, homes, account
    finally:
        box.stop()
        subprocess.run(["userdel", user], check=False)
        shutil.rmtree(root, ignore_errors=True)


ENV = {"PATH": "/usr/bin:/bin", "HOME": "/"}


def _run(box: Sandbox, account: pwd.struct_passwd, script: str, cwd: Path) -> tuple[int, str]:
    argv, _ = box.command(Entry(["sh", "-c", script], account.pw_uid, account.pw_gid, cwd, ENV))
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=30, check=False, env=runtime_environment()
    )
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
    assert "pytest" not in out and "tini" in out  # the sandbox's first process only


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
    argv, _ = box.command(
        Entry(
            ["sh", "-c", "sleep 300 & sleep 300"],
            account.pw_uid,
            account.pw_gid,
            homes / "mine",
            ENV,
        )
    )
    subprocess.Popen(argv, start_new_session=True, env=runtime_environment())

    assert wait_until(lambda: len(pids_of_uid(account.pw_uid)) >= 2, 5)
    box.stop()
    assert not alive(box.init_pid)
    assert wait_until(lambda: pids_of_uid(account.pw_uid) == [], 5)


# -- what no namespace covers: inodes, keys, resources -----------------------------------

FLOCK_HOLD = (
    "import fcntl, sys, time; f = open(sys.argv[1]); fcntl.flock(f, fcntl.LOCK_EX); "
    "print('held', flush=True); time.sleep(30)"
)
FLOCK_TRY = (
    "import fcntl, sys; f = open(sys.argv[1])\n"
    "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')\n"
    "except BlockingIOError:\n    print('taken')"
)
ADD_KEY = (
    "import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
    "libc.syscall(250, 8, -4, -3); "  # KEYCTL_LINK the user keyring into the session's
    "k = libc.syscall(248, b'user', b'cleanroom-sandbox-test', b'x', 1, -4); "
    "print('made' if k >= 0 else f'refused {ctypes.get_errno()}'); "
    "k >= 0 and libc.syscall(250, 21, k)"  # KEYCTL_INVALIDATE: leave no key behind
)
MEMORY_HOG = 'b = bytearray(256 << 20); b[::4096] = b"x" * len(b[::4096]); print("kept")'
SHARED_FILE = "/etc/os-release"  # on the host's root file system, readable by anyone


@pytest.fixture
def two_sandboxes(
    tmp_path: Path,
) -> Iterator[Callable[[SandboxProtections], tuple[Sandbox, Sandbox, pwd.struct_passwd, Path]]]:
    if os.geteuid() != 0:
        pytest.fail("sandboxes are made by root")
    user = f"crsbx{secrets.token_hex(3)}"
    subprocess.run(["useradd", "-M", "-U", user], check=True)
    account = pwd.getpwnam(user)
    root = Path("/var/lib/cleanroom/test-sandbox") / user
    boxes: list[Sandbox] = []

    def make(protections: SandboxProtections) -> tuple[Sandbox, Sandbox, pwd.struct_passwd, Path]:
        made = []
        for name in ("a", "b"):
            home = root / "homes" / name
            home.mkdir(parents=True, exist_ok=True)
            os.chown(home, account.pw_uid, account.pw_gid)
            layout = SandboxLayout(writable=(home,), hidden=(root / "homes",), display_number=None)
            box = Sandbox.start(
                name, layout, tmp_path / f"{name}.log", owner=user, protections=protections
            )
            boxes.append(box)
            made.append(box)
        return made[0], made[1], account, root / "homes"

    try:
        yield make
    finally:
        for box in boxes:
            box.stop()
        assert clear_keyrings(account.pw_uid, account.pw_gid) is None
        subprocess.run(["userdel", user], check=False)
        shutil.rmtree(root, ignore_errors=True)


def _lock_crosses(a: Sandbox, b: Sandbox, account: pwd.struct_passwd) -> bool:
    argv, pid_file = a.command(
        Entry(
            ["/usr/bin/python3", "-I", "-c", FLOCK_HOLD, SHARED_FILE],
            account.pw_uid,
            account.pw_gid,
            "/",
            ENV,
        )
    )
    holder = SandboxedProcess(
        argv,
        pid_file,
        stdout=subprocess.PIPE,
        text=True,
        env=runtime_environment(),
        start_new_session=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        argv, _ = b.command(
            Entry(
                ["/usr/bin/python3", "-I", "-c", FLOCK_TRY, SHARED_FILE],
                account.pw_uid,
                account.pw_gid,
                "/",
                ENV,
            )
        )
        seen = subprocess.run(
            argv, capture_output=True, text=True, timeout=30, env=runtime_environment()
        )
        return seen.stdout.strip() == "taken"
    finally:
        stop_group(holder, 0.0)


def test_a_lock_on_a_file_both_see_stays_in_its_sandbox_and_crosses_on_shared_inodes(
    two_sandboxes: Callable[[SandboxProtections], tuple[Sandbox, Sandbox, pwd.struct_passwd, Path]],
) -> None:
    a, b, account, _ = two_sandboxes(SandboxProtections())
    assert not _lock_crosses(a, b, account)
    # The control: the same two sandboxes on the host's own inodes.
    a, b, account, _ = two_sandboxes(SandboxProtections(own_inodes=False))
    assert _lock_crosses(a, b, account)


def test_a_kernel_key_is_refused_inside_and_made_without_the_filter(
    two_sandboxes: Callable[[SandboxProtections], tuple[Sandbox, Sandbox, pwd.struct_passwd, Path]],
) -> None:
    a, _, account, _ = two_sandboxes(SandboxProtections())
    _, out = _run(a, account, f'/usr/bin/python3 -I -c "{ADD_KEY}"', Path("/"))
    assert out.strip() == "refused 1", out  # EPERM
    _, out = _run(a, account, "cat /proc/keys | wc -l", Path("/"))
    assert out.strip() == "0", out  # masked
    bare, _, account, _ = two_sandboxes(SandboxProtections(syscall_filter=False))
    _, out = _run(bare, account, f'/usr/bin/python3 -I -c "{ADD_KEY}"', Path("/"))
    assert out.strip() == "made", out


def test_root_inside_cannot_mount_or_write_outside_its_places(
    two_sandboxes: Callable[[SandboxProtections], tuple[Sandbox, Sandbox, pwd.struct_passwd, Path]],
) -> None:
    a, *_ = two_sandboxes(SandboxProtections())
    argv, _ = a.command(Entry(
        ["sh", "-c", "mount -t tmpfs none /mnt; echo m=$?; touch /etc/cleanroom-x; echo t=$?"],
        0, 0, "/", ENV,
    ))  # fmt: skip
    out = subprocess.run(
        argv, capture_output=True, text=True, timeout=30, env=runtime_environment()
    ).stdout
    assert "m=0" not in out and "t=0" not in out, out
    assert not Path("/etc/cleanroom-x").exists()


def test_the_memory_tmpfs_and_process_limits_hold_and_are_gone_without_limits(
    two_sandboxes: Callable[[SandboxProtections], tuple[Sandbox, Sandbox, pwd.struct_passwd, Path]],
) -> None:
    small = SandboxLimits(memory_mib=96, pids=64, tmpfs_mib=32)
    a, _, account, _ = two_sandboxes(SandboxProtections(limits=small))
    # A tmpfs past its size: the write fails, nothing else does.
    _, out = _run(a, account, "head -c 48M /dev/zero > /tmp/fill; echo rc=$?", Path("/"))
    assert "rc=0" not in out, out
    # Memory past the cgroup's limit: the hog is killed, inside the sandbox.
    _, out = _run(
        a,
        account,
        f"/usr/bin/python3 -I -c '{MEMORY_HOG}'; echo rc=$?",
        Path("/"),
    )
    assert "kept" not in out, out
    # Processes past the pids limit: fork fails.
    _, out = _run(
        a,
        account,
        "for i in $(seq 100); do sleep 5 & done 2>/dev/null; echo n=$(jobs -p | wc -l)",
        Path("/"),
    )
    assert "n=100" not in out, out
    free, _, account, _ = two_sandboxes(SandboxProtections(limits=None))
    _, out = _run(free, account, "head -c 48M /dev/zero > /tmp/fill; echo rc=$?", Path("/"))
    assert "rc=0" in out, out


OPEN_PTYS = (
    "import pty\nheld = []\ntry:\n    for _ in range(64): held.append(pty.openpty())\n"
    "except OSError: pass\nprint(len(held))"
)


def test_a_sandbox_takes_at_most_its_bound_of_the_kernels_ptys_and_its_neighbour_still_gets_one(
    two_sandboxes: Callable[[SandboxProtections], tuple[Sandbox, Sandbox, pwd.struct_passwd, Path]],
) -> None:
    a, b, account, _ = two_sandboxes(SandboxProtections(limits=SandboxLimits(ptys=4)))
    argv, pid_file = a.command(
        Entry(["/usr/bin/python3", "-I", "-c", OPEN_PTYS + "; import time; time.sleep(30)"],
              account.pw_uid, account.pw_gid, "/", ENV)
    )  # fmt: skip
    holder = SandboxedProcess(
        argv, pid_file, stdout=subprocess.PIPE, text=True, env=runtime_environment(),
        start_new_session=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "4"
        _, out = _run(b, account, f"/usr/bin/python3 -I -c '{OPEN_PTYS}'", Path("/"))
        assert out.strip() == "4", out  # its own four, whatever a takes
    finally:
        stop_group(holder, 0.0)
    free, _, account, _ = two_sandboxes(SandboxProtections(limits=None))
    _, out = _run(free, account, f"/usr/bin/python3 -I -c '{OPEN_PTYS}'", Path("/"))
    assert out.strip() == "64", out  # without limits: the kernel's one pool


def test_aio_page_eviction_and_other_processes_are_refused_inside_and_not_without_the_filter(
    two_sandboxes: Callable[[SandboxProtections], tuple[Sandbox, Sandbox, pwd.struct_passwd, Path]],
) -> None:
    a, _, account, _ = two_sandboxes(SandboxProtections())
    _, out = _run(a, account, f"/usr/bin/python3 -I -c '{REFUSALS}'", Path("/"))
    assert out.split() == ["io_setup=1", "fadvise=1", "pidfd_getfd=1", "locks=masked"], out
    bare, _, account, _ = two_sandboxes(
        SandboxProtections(syscall_filter=False, kernel_wide_masked=False)
    )
    _, out = _run(bare, account, f"/usr/bin/python3 -I -c '{REFUSALS}'", Path("/"))
    assert out.split() == ["io_setup=0", "fadvise=0", "pidfd_getfd=0", "locks=listed"], out


REFUSALS = (
    "import ctypes, os, stat, subprocess\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "def errno(r): return 0 if r >= 0 else ctypes.get_errno()\n"
    "ctx = ctypes.c_ulong(0)\n"
    'print(f"io_setup={errno(libc.syscall(206, 8, ctypes.byref(ctx)))}")\n'
    'fd = os.open("/etc/os-release", os.O_RDONLY)\n'
    'print(f"fadvise={libc.posix_fadvise(fd, 0, 0, 4)}")\n'
    'child = subprocess.Popen(["sleep", "5"])\n'
    "pidfd = libc.syscall(434, child.pid, 0)\n"
    'print(f"pidfd_getfd={errno(libc.syscall(438, pidfd, 0, 0))}")\n'
    "child.kill()\n"
    'masked = not stat.S_ISREG(os.stat("/proc/locks").st_mode)\n'
    'print("locks=" + ("masked" if masked else "listed"))\n'
)


def test_stopping_a_command_ends_its_program_inside_not_only_the_runtime(sandbox: Boxed) -> None:
    box, homes, account = sandbox
    argv, pid_file = box.command(
        Entry(
            ["sh", "-c", "sleep 300 & sleep 301"],
            account.pw_uid,
            account.pw_gid,
            homes / "mine",
            ENV,
        )
    )
    proc = SandboxedProcess(argv, pid_file, env=runtime_environment(), start_new_session=True)
    assert wait_until(lambda: len(pids_of_uid(account.pw_uid)) >= 3, 5)
    stop_group(proc, 0.0)
    assert wait_until(lambda: pids_of_uid(account.pw_uid) == [], 5), pids_of_uid(account.pw_uid)
    assert box.alive()
