"""Fixtures for the verify server's integration tests: a real server process, a harness
client, direct read access to the server's database, raw sockets and a tab in headless
Chromium (the browser itself is `chromium` in tests/integration/conftest.py)."""

from __future__ import annotations

import contextlib
import itertools
import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from cleanroom.core.tokens import Token, mint
from cleanroom.store.submissions import StoreTotals, SubmissionStore
from cleanroom.verify_server.client import Lease, VerifyClient
from cleanroom.verify_server.process import VerifyServerProcess

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
