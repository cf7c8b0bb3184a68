"""Fixtures for the verify server's integration tests: a real server process, a harness
client, direct read access to the server's database, raw sockets and headless Chromium."""

from __future__ import annotations

import contextlib
import itertools
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cleanroom.core.tokens import Token, mint
from cleanroom.lifecycle import wait_until
from cleanroom.store.submissions import StoreTotals, SubmissionStore
from cleanroom.verify_server.client import Lease, VerifyClient
from cleanroom.verify_server.process import VerifyServerProcess

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

_seq = itertools.count(1)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VerifyServerProcess]:
    """One verify server process shared by the session's integration tests."""
    with VerifyServerProcess.start(tmp_path_factory.mktemp("verify-server")) as proc:
        yield proc


@pytest.fixture(scope="session")
def client(server: VerifyServerProcess) -> Iterator[VerifyClient]:
    """The harness client, holding the key."""
    with server.client() as c:
        yield c


@pytest.fixture(scope="session")
def http(server: VerifyServerProcess) -> Iterator[httpx.Client]:
    """A plain HTTP client with no key: what the agent (or anyone) can do."""
    with httpx.Client(base_url=server.url, timeout=5.0, trust_env=False) as c:
        yield c


@pytest.fixture(scope="session")
def key_headers(server: VerifyServerProcess) -> dict[str, str]:
    """Headers carrying the harness key."""
    return {"Authorization": f"Bearer {server.key}"}


@pytest.fixture(scope="session")
def db(server: VerifyServerProcess) -> Iterator[SubmissionStore]:
    """A second connection to the server's database, to check what was (not) stored."""
    store = SubmissionStore.open(server.db)
    yield store
    store.close()


@pytest.fixture
def totals(db: SubmissionStore) -> Callable[[], StoreTotals]:
    """Current row counts of the server's database."""
    return db.totals


def fresh_token(env: str = "env01", window: int = 1) -> Token:
    """A token for a rollout no other test uses."""
    return mint(f"{env}-w{window:03d}-r{next(_seq):04d}")


@pytest.fixture
def new_lease(client: VerifyClient) -> Callable[..., Lease]:
    """Make a lease for a fresh rollout: ``new_lease(env="env01", window=1, ttl_s=600)``."""

    def make(env: str = "env01", window: int = 1, ttl_s: float = 600.0) -> Lease:
        return client.lease(fresh_token(env, window), ttl_s=ttl_s)

    return make


@pytest.fixture
def raw_http(server: VerifyServerProcess) -> Callable[[bytes], tuple[int, bytes]]:
    """Send raw bytes on a new connection; return the status and body of the answer."""

    def send(request: bytes) -> tuple[int, bytes]:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            # The server may answer and close before it has read everything we send.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(request)
            data = b""
            while b"\r\n\r\n" not in data or len(data) < _expected_len(data):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        return int(head.split(b" ", 2)[1]), body

    return send


def _expected_len(data: bytes) -> int:
    head, sep, _ = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(head) + len(sep) + int(value)
    return len(data) + 1


@pytest.fixture
def nothing_stored(
    http: httpx.Client, totals: Callable[[], StoreTotals]
) -> Callable[[], Callable[[], None]]:
    """``check = nothing_stored()`` before a request that must be refused; ``check()`` after
    it asserts that the server still answers and that no row was added or changed."""

    def snapshot() -> Callable[[], None]:
        before = totals()

        def check() -> None:
            assert http.get("/v1/healthz").json() == {"ok": True}
            assert totals() == before

        return check

    return snapshot


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


@pytest.fixture
def tab(chromium: Any) -> Iterator[Any]:
    """A fresh tab in the browser's one window; closed after the test."""
    context = chromium.contexts[0]
    before = list(context.pages)
    page = context.new_page()
    yield page
    for p in context.pages:
        if p not in before:
            p.close()
