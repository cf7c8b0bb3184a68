"""The load baseline: a minimal ASGI app that reads the body and answers 200, served by
the same uvicorn settings as the verify server, so the ratio shows what the server's own
work costs. Run: ``python bench/verify_server/baseline_app.py PORT_FILE``."""

from __future__ import annotations

import sys
from pathlib import Path

import uvicorn
from starlette.types import Receive, Scope, Send

from cleanroom.verify_server.serve import bind, uvicorn_config, write_port_file


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """Drain the request body, answer ``200 ok``."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    headers = [(b"content-type", b"text/plain"), (b"content-length", b"2")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"ok"})


def main() -> None:
    """Serve the baseline on a free loopback port, written to the port file."""
    sock = bind("127.0.0.1", 0)
    write_port_file(Path(sys.argv[1]), sock.getsockname()[1])
    uvicorn.Server(uvicorn_config(app)).run(sockets=[sock])


if __name__ == "__main__":
    main()
