"""The body-size guard refuses oversized bodies before the app sees them."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from starlette.types import Message, Receive, Scope, Send

from cleanroom.verify_server.limits import BodyLimit


class Recorder:
    """An inner app that records the body it was given."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        self.bodies.append(message["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def run(
    limit: int, chunks: list[bytes], headers: list[tuple[bytes, bytes]]
) -> tuple[Recorder, list[Message], int]:
    inner = Recorder()
    sent: list[Message] = []
    pending = list(chunks)
    reads = 0

    async def receive() -> Message:
        nonlocal reads
        reads += 1
        body = pending.pop(0) if pending else b""
        return {"type": "http.request", "body": body, "more_body": bool(pending)}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: dict[str, Any] = {"type": "http", "method": "POST", "headers": headers}
    # A thread of its own: a test elsewhere may leave an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, BodyLimit(inner, limit)(scope, receive, send)).result()
    return inner, sent, reads


def test_a_declared_length_over_the_limit_is_413_without_reading() -> None:
    inner, sent, reads = run(10, [b"x" * 11], [(b"content-length", b"11")])
    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"])["limit"] == 10
    assert (inner.bodies, reads) == ([], 0)


def test_a_streamed_body_is_cut_off_as_soon_as_it_passes_the_limit() -> None:
    inner, sent, reads = run(10, [b"x" * 6, b"x" * 6, b"x" * 6, b"x" * 6], [])
    assert sent[0]["status"] == 413
    assert inner.bodies == []
    assert reads == 2


def test_a_body_at_the_limit_reaches_the_app_whole_in_one_message() -> None:
    inner, sent, _ = run(10, [b"12345", b"67890"], [])
    assert sent[0]["status"] == 200
    assert inner.bodies == [b"1234567890"]


def test_a_non_numeric_content_length_is_400() -> None:
    inner, sent, _ = run(10, [b"x"], [(b"content-length", b"ten")])
    assert sent[0]["status"] == 400
    assert inner.bodies == []
