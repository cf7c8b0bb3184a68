"""What every kind of integration test shares: the check that the desktop stack is here,
the runtime on the real Docker daemon, headless Chromium, and one run of `cleanroom demo`.
A missing part fails the tests with what to do about it; nothing is skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.docker_layer import PODMAN_HOST
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.isolation.battery import IsolationCheck, TrialContext, run_test
from cleanroom.lifecycle import wait_until
from cleanroom.store.rundb import RunStore
from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verify_server.client import VerifyClient
from cleanroom.verify_server.process import VerifyServerProcess

# Everything a pool with every program needs; a test that starts fewer programs names less.
DESKTOP_STACK = ("Xvfb", "xauth", "dbus-daemon", "soffice", "xterm", "chromium", "useradd")
# The image every example task is built from.
BASE_IMAGE = "cleanroom/base:bookworm"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def require_desktop_stack(needed: Sequence[str] = DESKTOP_STACK) -> None:
    """Fail (never skip) with a clear message when not root (a pool creates Unix users) or
    when a program in ``needed`` is missing (Writer also needs the system Python that runs
    the AT-SPI reader)."""
    if os.geteuid() != 0:
        pytest.fail("these tests start desktop environments, which create Unix users: run as root")
    missing = [p for p in needed if shutil.which(p) is None]
    if "soffice" in needed and not os.path.exists("/usr/bin/python3"):
        missing.append("/usr/bin/python3 (with python3-pyatspi)")
    if missing:
        pytest.fail(f"missing for desktop environments: {', '.join(missing)}; run scripts/setup.sh")


@pytest.fixture(scope="session")
def desktop_stack() -> None:
    """The whole desktop stack, checked once (see `require_desktop_stack`)."""
    require_desktop_stack()


@pytest.fixture(scope="session")
def runtime(docker_labels: dict[str, str]) -> Iterator[DockerRuntime]:
    """A runtime on the real daemon whose every container and image is labelled for cleanup
    (this worker's containers at its end, the suite's images at the suite's end)."""
    labels = docker_labels
    try:
        rt = DockerRuntime.connect(labels)
    except RuntimeUnavailable as exc:
        pytest.fail(f"these tests need a running Docker daemon ({exc}); run `make setup`")
    try:
        rt.docker.client.images.get(BASE_IMAGE)
    except Exception as exc:  # any failure here has the same fix
        pytest.fail(f"the base image {BASE_IMAGE} is missing ({exc}); run `make setup`")
    yield rt
    rt.remove_labelled(labels, images=False)


@pytest.fixture(scope="session")
def podman(docker_labels: dict[str, str]) -> Iterator[DockerRuntime]:
    """podman's Docker-compatible API, with what the tests start there labelled for cleanup."""
    try:
        rt = DockerRuntime.connect(docker_labels, host=PODMAN_HOST)
    except RuntimeUnavailable as exc:
        pytest.fail(f"these tests need podman's API service ({exc}); run `make setup`")
    assert rt.docker.podman, f"the service at {PODMAN_HOST} is not podman"
    yield rt
    rt.remove_labelled(docker_labels, images=False)


# A program of an environment's own that grabs its display's server and says so, then
# holds the grab until it is ended (at most five minutes).
GRAB_SERVER = """
import ctypes, time
x = ctypes.CDLL("libX11.so.6")
x.XOpenDisplay.restype = ctypes.c_void_p
d = ctypes.c_void_p(x.XOpenDisplay(None))
x.XGrabServer(d)
x.XSync(d, 0)
print("grabbed", flush=True)
time.sleep(300)
"""


# --- pools for the isolation checks ----------------------------------------------------


@contextmanager
def pool_trials(run_dir: Path, config: PoolConfig, verify: VerifyClient) -> Iterator[TrialContext]:
    """A started pool of ``config`` with a run store in ``run_dir``, as the isolation
    checks' context; the pool is stopped and the store closed afterwards."""
    store = RunStore.create(run_dir)
    pool = Pool(config, run_dir, store)
    try:
        pool.start()
        yield TrialContext(pool, store, 1, run_dir, verify=verify)
    finally:
        pool.stop()
        store.close()


@contextmanager
def isolated_trials(run_dir: Path, config: PoolConfig) -> Iterator[TrialContext]:
    """`pool_trials` with a verify server of its own."""
    server = VerifyServerProcess.start(run_dir / "verify-server")
    client = server.client()
    try:
        with pool_trials(run_dir, config, client) as ctx:
            yield ctx
    finally:
        client.close()
        server.stop()


def row_results(rows: list[IsolationRow]) -> dict[tuple[int, str, str], str]:
    """Each row's result and detail by (trial, from, to), for assertion messages."""
    return {(r.trial, r.from_env, r.to_env): f"{r.result.value} {r.detail}".strip() for r in rows}


def assert_all_clean(test: IsolationCheck, ctx: TrialContext, trials: int) -> None:
    """Run ``trials`` trials of ``test``: some rows, every one clean."""
    rows = run_test(test, ctx, trials)
    assert rows, f"{test.name} returned no rows"
    assert all(r.result is RowResult.CLEAN for r in rows), row_results(rows)


# One finished `cleanroom demo`: its run folder and what it printed.
DemoRun = tuple[Path, subprocess.CompletedProcess[str]]

# A session fixture's setup counts against the first test that asks for it.
DEMO_TIMEOUT_S = 880


@pytest.fixture(scope="session")
def demo_run(desktop_stack: None, tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """`cleanroom demo`, run once per session as a user runs it. Its own test reads all of
    it; the red-team tests judge the container matrix it ran (the product's own run of
    it) instead of running the same matrix again."""
    run = tmp_path_factory.mktemp("demo") / "run"
    cli = Path(sys.executable).with_name("cleanroom")
    proc = subprocess.run(
        [str(cli), "demo", "--run", str(run)],
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
    )
    return run, proc


# --- headless Chromium ------------------------------------------------------------------


# Module scope: the sync Playwright API keeps an event loop running in this thread while
# it is open, which would break any later test that starts its own loop.
@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real headless Chromium, driven through Playwright over CDP.

    Chromium is started here rather than by Playwright's ``launch``: Playwright emulates
    focus on every page it creates, which keeps every tab "visible" forever. Connecting
    with ``no_defaults`` to the browser's own default context leaves tabs behaving as in a
    real browser, so a background tab really is hidden.
    """
    if not CHROMIUM.exists() and shutil.which("chromium") is None:
        pytest.fail(
            "browser tests need headless Chromium at /usr/bin/chromium "
            "(apt-get install -y chromium); none was found",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    argv = [
        str(CHROMIUM if CHROMIUM.exists() else shutil.which("chromium")),
        *CHROMIUM_ARGS,
        "--headless=new",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        "about:blank",
    ]
    log = open(profile.parent / "chromium.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        port = _devtools_port(profile, proc)
        pw = sync_playwright().start()
        try:
            browser = pw.chromium.connect_over_cdp(f"http://127.0.0.1:{port}", no_defaults=True)
            yield browser
            browser.close()
        finally:
            pw.stop()
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _devtools_port(profile: Path, proc: subprocess.Popen[bytes]) -> int:
    active = profile / "DevToolsActivePort"

    def port() -> int | None:
        if proc.poll() is not None:
            pytest.fail(f"Chromium exited at start with code {proc.returncode}", pytrace=False)
        first = active.read_text().split("\n", 1)[0].strip() if active.exists() else ""
        return int(first) if first.isdigit() else None

    found = wait_until(port, 20)
    if found is None:
        pytest.fail("Chromium did not open its DevTools port within 20 s", pytrace=False)
    return found
