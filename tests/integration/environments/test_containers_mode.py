"""Containers mode on real Docker and real Xvfb: each environment's programs in a container
of their own that has no network and can reach only its own display."""

from __future__ import annotations

import http.server
import os
import pwd
import secrets
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cleanroom.core.isolation import RowResult
from cleanroom.core.outcomes import Cause
from cleanroom.environments.containers.desktop_image import DockerUnavailable, docker_client
from cleanroom.environments.containers.program_container import POOL_LABEL, NoNetworkInContainer
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.session.output_log import PROGRAM_LOG_MAX_BYTES, dropped_note
from cleanroom.environments.watchdog import Watchdog
from cleanroom.isolation.battery import TrialContext, run_test
from cleanroom.isolation.checks.channels import ChannelsCheck
from cleanroom.lifecycle import wait_until
from cleanroom.rollouts.osworld_desktop_env import OSWorldDesktopEnv
from cleanroom.store.rundb import RunStore

from .conftest import require_desktop_stack

pytestmark = pytest.mark.docker

# Tries both ways an X client reaches display N: its socket file and the abstract socket
# of the same name (the latter lives in the network namespace).
_CONNECT = """
import socket, sys
for address in ("/tmp/.X11-unix/X" + sys.argv[1], "\\0/tmp/.X11-unix/X" + sys.argv[1]):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(address)
        print("connected")
    except OSError as exc:
        print(type(exc).__name__)
"""


def require_docker() -> Any:
    """A client of the real daemon; fails (never skips) without one."""
    try:
        return docker_client().client
    except DockerUnavailable as exc:
        pytest.fail(f"containers mode needs a running Docker daemon: {exc}")


@pytest.fixture(scope="module")
def contained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    """The canary plus two environments whose programs run in containers; env01 runs
    Writer, the terminal and Chromium, env02 Writer and the terminal."""
    require_desktop_stack()
    require_docker().close()
    config = PoolConfig(
        envs=2,
        containers=True,
        programs=("writer", "terminal"),
        programs_by_env={"env01": ("writer", "terminal", "browser")},
        canary_programs=("terminal",),
    )
    pool = Pool(config, tmp_path_factory.mktemp("contained-run"))
    pool.start()
    try:
        yield pool
    finally:
        pool.stop()


def _interfaces(pid: int) -> set[str]:
    lines = Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]
    return {line.split(":", 1)[0].strip() for line in lines}


def _uid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError(f"no Uid line for {pid}")


def test_each_environment_runs_its_programs_in_its_own_container_with_only_loopback(
    contained: Pool,
) -> None:
    client = require_docker()
    try:
        seen = set()
        for name in ("env01", "env02"):
            env = contained.env(name)
            assert env.container is not None
            container = client.containers.get(env.container.id)
            assert container.status == "running"
            assert container.attrs["HostConfig"]["NetworkMode"] == "none"
            in_container = {
                int(row[1]) for row in container.top(ps_args="-eo user,pid")["Processes"]
            }
            for program in env.programs:
                assert program.pid in in_container, (
                    f"{name} {program.name} is not in {container.name}"
                )
                assert _interfaces(program.pid) == {"lo"}
                assert _uid(program.pid) == env.account.uid
                assert os.readlink(f"/proc/{program.pid}/ns/net") != os.readlink(
                    "/proc/self/ns/net"
                )
            seen.add(container.id)
        assert len(seen) == 2, "two environments share a container"
        assert {p.name for p in contained.env("env01").programs} == {
            "writer",
            "terminal",
            "browser",
        }
    finally:
        client.close()


def test_osworld_pyautogui_code_runs_inside_the_environments_container(contained: Pool) -> None:
    """An OSWorld agent's pyautogui code runs where the environment's programs run: in
    its container (only loopback there), with the image's pyautogui, on its display."""
    env = OSWorldDesktopEnv(
        LocalHandle(contained, "env02"), action_space="pyautogui", require_a11y_tree=False
    )
    env.begin(None)
    env.step(
        "import os; pyautogui.moveTo(10, 20); "
        "print(sorted(os.listdir('/sys/class/net')), tuple(pyautogui.position()), "
        "pyautogui.__file__)",
        pause=0,
    )
    result = env.code_results[-1]
    assert result.exit_code == 0, result.stderr.decode(errors="replace")[-2000:]
    assert result.stdout.decode().split(" /")[0] == "['lo'] (10, 20)"
    assert "/opt/cleanroom/pyautogui/pyautogui/__init__.py" in result.stdout.decode()


# Writes 24 MiB into the container's first process's output, and as much into its own.
_FLOOD_BOTH = """
import os, sys
block = b"x" * (1 << 20)
first = os.open("/proc/1/fd/1", os.O_WRONLY)
for _ in range(24):
    os.write(first, block)
    sys.stdout.buffer.write(block)
"""


def test_a_contained_flood_leaves_no_daemon_log_and_a_capped_log_of_its_own(
    contained: Pool,
) -> None:
    """The container's first process has no log on the host for a program to fill, and
    a command's own output stops at its log's cap."""
    proc, log = contained.start_inside("env01", ["python3", "-c", _FLOOD_BOTH], "flood")
    assert proc.wait(timeout=60) == 0
    container = contained.env("env01").container
    assert container is not None
    client = require_docker()
    try:
        attrs = client.api.inspect_container(container.id)
    finally:
        client.close()
    assert attrs["HostConfig"]["LogConfig"]["Type"] == "none"
    assert attrs["LogPath"] == ""
    note = dropped_note(PROGRAM_LOG_MAX_BYTES)
    assert wait_until(lambda: log.read_bytes().endswith(note), 20, 0.1)
    assert log.stat().st_size == PROGRAM_LOG_MAX_BYTES + len(note)


def test_a_container_cannot_connect_to_another_environments_display(contained: Pool) -> None:
    one, two = contained.env("env01"), contained.env("env02")
    assert one.container is not None
    own, other = one.live.display.number, two.live.display.number

    # The control: the same attempts reach the environment's own display.
    code, out = one.container.run(["python3", "-c", _CONNECT, str(own)])
    assert code == 0 and out.split()[0] == "connected", out
    code, out = one.container.run(["xterm", "-display", f":{own}", "-e", "/bin/true"])
    assert code == 0, out

    # Neither the other display's socket file nor its abstract socket is reachable.
    code, out = one.container.run(["python3", "-c", _CONNECT, str(other)])
    assert code == 0 and "connected" not in out.split(), out
    code, out = one.container.run(["xterm", "-display", f":{other}", "-e", "/bin/true"])
    assert code != 0 and "open display" in out, out


def test_typing_reaches_a_contained_writer_and_atspi_reads_it_from_the_host(
    contained: Pool,
) -> None:
    handle = LocalHandle(contained, "env02")
    text = "typed into a contained writer 7301"
    handle.focus(program="writer")
    handle.type_text(text)
    assert wait_until(
        lambda: text in (handle.focused_text()["document_text"] or ""), 15, poll_s=0.2
    ), handle.focused_text()


def test_a_contained_browser_opens_local_pages_and_refuses_network_ones(
    contained: Pool,
) -> None:
    contained.open_url("env01", "about:blank#contained")
    assert contained.env("env01").window_of("browser") is not None
    with pytest.raises(NoNetworkInContainer):
        contained.open_url("env01", "http://example.com/")


def test_a_page_the_harness_serves_on_loopback_reaches_a_contained_browser(
    contained: Pool,
) -> None:
    title = f"harness-page-{secrets.token_hex(4)}"
    body = f"<html><head><title>{title}</title></head><body>ok</body></html>".encode()

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        contained.open_url("env01", f"http://127.0.0.1:{server.server_port}/")
        env = contained.env("env01")
        assert wait_until(lambda: any(title in w.title for w in env.windows()), 20.0, poll_s=0.2), [
            w.title for w in env.windows()
        ]
    finally:
        server.shutdown()  # handler threads are daemons: an idle preconnect cannot hold it
        server.server_close()


def test_reset_gives_a_ready_environment_in_a_fresh_container_at_a_higher_generation(
    contained: Pool,
) -> None:
    env = contained.env("env02")
    assert env.container is not None
    old_container = env.container.id
    (env.account.home / "Desktop" / "left-behind.txt").write_text("x")
    handle = LocalHandle(contained, "env02")
    before = handle.generation
    after = handle.reset()
    assert after > before
    assert env.container is not None and env.container.id != old_container
    assert not (env.account.home / "Desktop" / "left-behind.txt").exists()
    assert handle.clipboard() == {"CLIPBOARD": None, "PRIMARY": None}
    assert not env.problems() and env.window_of("writer") is not None
    client = require_docker()
    try:
        assert not client.containers.list(all=True, filters={"id": old_container})
    finally:
        client.close()


def test_a_killed_program_in_a_container_is_recovered_at_a_new_generation(
    contained: Pool,
) -> None:
    env = contained.env("env02")
    before = contained.generation("env02")
    writer = next(p for p in env.programs if p.name == "writer")
    os.kill(writer.pid, signal.SIGKILL)  # as the agent's own processes could
    assert wait_until(lambda: not writer.alive(), 5)
    # The container still runs: only what runs in it ended Writer, the agent's doing.
    broken = contained.breakage("env02")
    assert broken is not None and broken.cause is Cause.AGENT, broken
    assert "env02" in Watchdog(contained).check_once()
    assert contained.generation("env02") > before
    assert contained.gate.book.left_by("env02", before) == broken
    assert env.container is not None
    assert not env.problems() and env.window_of("writer") is not None
    assert writer.pid not in {p.pid for p in env.programs}


def test_a_container_ended_from_outside_is_the_infrastructures(contained: Pool) -> None:
    env = contained.env("env02")
    assert env.container is not None
    client = require_docker()
    try:
        client.containers.get(env.container.id).kill()
    finally:
        client.close()
    assert wait_until(lambda: bool(env.problems()), 10)
    broken = contained.breakage("env02")
    assert broken is not None and broken.cause is Cause.INFRASTRUCTURE, broken
    assert "env02" in Watchdog(contained).check_once()
    assert not env.problems() and env.window_of("writer") is not None


def test_down_leaves_no_container_and_no_user_behind(tmp_path: Path) -> None:
    require_desktop_stack()
    client = require_docker()
    config = PoolConfig(
        envs=1, containers=True, programs=("terminal",), canary_programs=("terminal",)
    )
    pool = Pool(config, tmp_path / "run")
    try:
        pool.start()
        users = [pool.env(n).account.user for n in pool.names]
        label = {"label": f"{POOL_LABEL}={pool.pool_id}"}
        assert len(client.containers.list(filters=label)) == 2
    finally:
        pool.stop()
    try:
        assert client.containers.list(all=True, filters=label) == []
        for user in users:
            with pytest.raises(KeyError):
                pwd.getpwnam(user)
        assert not pool.root.exists()
    finally:
        client.close()


def test_the_channels_check_is_clean_and_proven_between_containers(
    contained: Pool, tmp_path: Path
) -> None:
    store = RunStore.create(tmp_path / "run")
    try:
        rows = run_test(ChannelsCheck(), TrialContext(contained, store, 1, tmp_path / "run"), 1)
    finally:
        store.close()
    assert rows and all(r.result is RowResult.CLEAN for r in rows), [
        f"{r.from_env}->{r.to_env} {r.result.value} {r.detail}"
        for r in rows
        if r.result is not RowResult.CLEAN
    ]
