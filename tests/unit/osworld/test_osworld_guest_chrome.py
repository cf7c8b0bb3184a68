"""The Chrome helper's bounds, against small local servers standing in for a DevTools
endpoint: nothing listening, an HTTP answer over the cap, a WebSocket message over the
cap. (A real Chrome is driven by the integration tests.)"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from cleanroom.verifiers.osworld import guest_chrome


def serve_once(reply: Callable[[socket.socket], None]) -> Iterator[int]:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def run() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)  # the request or the upgrade
            reply(conn)
            time.sleep(0.5)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield port
    listener.close()


@pytest.fixture
def huge_http() -> Iterator[int]:
    def reply(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 50000000\r\n\r\n[")

    yield from serve_once(reply)


@pytest.fixture
def huge_message() -> Iterator[int]:
    def reply(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
        conn.sendall(bytes([0x81, 127]) + (50_000_000).to_bytes(8, "big"))

    yield from serve_once(reply)


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return int(s.getsockname()[1])


def test_nothing_on_the_port_answers_not_connected_within_the_wait() -> None:
    started = time.monotonic()

    answer = guest_chrome.op_tabs(
        {"port": free_port(), "connect_s": 0.5, "load_s": 1, "total_s": 1, "max_bytes": 1000}
    )

    assert answer["connected"] is False
    assert time.monotonic() - started < 3


def test_an_http_answer_over_the_cap_is_refused_before_it_is_read(huge_http: int) -> None:
    with pytest.raises(guest_chrome.DevToolsError, match="more than 1000"):
        guest_chrome.http_json(huge_http, "GET", "/json/list", 5, 1000)


def test_a_devtools_message_over_the_cap_is_refused_before_it_is_read(huge_message: int) -> None:
    ws = guest_chrome.WebSocket(huge_message, "/devtools/page/x", guest_chrome.Deadline(5), 1000)
    try:
        with pytest.raises(guest_chrome.DevToolsError, match="ran past 1000"):
            ws.call("Runtime.evaluate", {"expression": "1"})
    finally:
        ws.close()
