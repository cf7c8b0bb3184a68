"""The harness client turns a dead, hung or failing verifier into
``invalid(verifier_unavailable)``: never a failure blamed on the agent."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cleanroom.core.outcomes import Reason, Status
from cleanroom.core.tokens import mint
from cleanroom.verify_server.client import (
    Lease,
    VerifierRejected,
    VerifierUnavailable,
    VerifyClient,
)
from cleanroom.verify_server.process import VerifyServerProcess

A_LEASE = Lease(
    lease_id="x" * 32,
    env="env01",
    rollout_id="env01-w001-r0001",
    token="env01-w001-r0001-0123abcd",
    window=1,
    form_url="",
    frames_url="",
    expires_at="",
)


def assert_unavailable(client: VerifyClient) -> None:
    outcome = client.verify_form(A_LEASE)
    assert outcome.status is Status.INVALID
    assert outcome.reason is Reason.VERIFIER_UNAVAILABLE
    assert outcome.score is None
    assert outcome.exit_code == 2


def test_a_killed_server_process_is_verifier_unavailable(tmp_path: Path) -> None:
    server = VerifyServerProcess.start(tmp_path)
    with server.client(timeout=2.0) as client:
        lease = client.lease(mint("env01-w001-r0001"))
        assert client.verify_form(lease).status is Status.FAILURE
        server.kill()
        assert not server.alive()
        outcome = client.verify_form(lease)
        assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.VERIFIER_UNAVAILABLE)
        with pytest.raises(VerifierUnavailable) as caught:
            client.healthz()
        assert caught.value.outcome().reason is Reason.VERIFIER_UNAVAILABLE


def test_a_refused_connection_is_verifier_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port now.
    with VerifyClient(f"http://127.0.0.1:{port}", "key", timeout=2.0) as client:
        assert_unavailable(client)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


def test_a_server_that_never_answers_times_out_as_verifier_unavailable(silent_port: int) -> None:
    with VerifyClient(f"http://127.0.0.1:{silent_port}", "key", timeout=0.3) as client:
        with pytest.raises(VerifierUnavailable, match="timed out"):
            client.healthz()
        assert_unavailable(client)


class _Failing(BaseHTTPRequestHandler):
    status = 503

    def do_GET(self) -> None:
        body = json.dumps({"error": "database is locked"}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(params=[500, 502, 503])
def failing_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A real HTTP server that answers every request with a 5xx."""
    handler = type("Handler", (_Failing,), {"status": request.param})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_5xx_is_verifier_unavailable(failing_url: str) -> None:
    with VerifyClient(failing_url, "key") as client:
        with pytest.raises(VerifierUnavailable, match="server error"):
            client.audit(1)
        assert_unavailable(client)


def test_a_4xx_is_a_rejected_request_not_an_outage(server: VerifyServerProcess) -> None:
    with (
        VerifyClient(server.url, "not-the-key") as client,
        pytest.raises(VerifierRejected) as caught,
    ):
        client.audit(1)
    assert caught.value.status == 401
