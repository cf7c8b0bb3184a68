"""The body-size guard: an ASGI middleware that never lets more than the limit in.

It runs before routing, so no endpoint ever sees an oversized body. A declared
Content-Length over the limit is refused before a single body byte is read; a chunked
(or lying) body is counted as it streams and refused the moment it passes the limit.
The whole accepted body is then handed to the app in one message.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 64 * 1024


async def _send_error(send: Send, status: int, message: str, limit: int) -> None:
    body = json.dumps({"error": message, "status": status, "limit": limit}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                # The rest of the body is never read, so the connection cannot be reused.
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else -1
    return None


class BodyLimit:
    """Refuse bodies over ``max_bytes`` with a JSON 413; pass everything else through."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes
        declared = _declared_length(scope)
        if declared is not None and declared < 0:
            await _send_error(send, 400, "Content-Length is not a number", limit)
            return
        if declared is not None and declared > limit:
            await _send_error(send, 413, f"request body is over {limit} bytes", limit)
            return

        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away: nothing to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _send_error(send, 413, f"request body is over {limit} bytes", limit)
                return
            if chunk:
                chunks.append(chunk)
            if not message.get("more_body", False):
                break

        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
