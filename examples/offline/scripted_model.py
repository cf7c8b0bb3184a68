"""A scripted model endpoint, for trying a loop offline: an OpenAI-compatible server on
127.0.0.1 whose "model" calls the ``bash`` tool once with a script you give it, then says
it is done. No weights, no key, no network; Python's standard library only.

    python examples/offline/scripted_model.py --port 8765 \\
        --script examples/tasks/fix-median/solution/solve.sh

serves ``POST /v1/chat/completions`` (streamed or not, as the client asks) and
``GET /v1/models``. A conversation with no tool result yet gets the tool call; one with a
tool result gets "Done.". Point a client at ``http://127.0.0.1:8765/v1`` with any model
name and any API key. With a task's solution as the script it plays the oracle; with a
script that plants a reward, a forger.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOOL = "bash"
USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


def reply(body: dict[str, Any], script: str) -> tuple[dict[str, Any], str]:
    """The assistant's message for a chat request, and its finish reason."""
    answered = any(m.get("role") == "tool" for m in body.get("messages", []))
    if answered:
        return {"role": "assistant", "content": "Done."}, "stop"
    call = {
        "id": f"call_{uuid.uuid4().hex[:8]}",
        "type": "function",
        "function": {"name": TOOL, "arguments": json.dumps({"command": script})},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"


def completion(body: dict[str, Any], script: str) -> dict[str, Any]:
    """A whole chat completion."""
    message, finish = reply(body, script)
    return {
        **_head(body, "chat.completion"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }


def chunks(body: dict[str, Any], script: str) -> list[dict[str, Any]]:
    """The same completion as the chunks of a stream: the message, its end, the usage."""
    message, finish = reply(body, script)
    delta = dict(message)
    if delta.get("tool_calls"):
        delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(delta["tool_calls"])]
    head = _head(body, "chat.completion.chunk")
    return [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**head, "choices": [], "usage": USAGE},
    ]


def _head(body: dict[str, Any], kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": kind,
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
    }


def handler(script: str) -> type[BaseHTTPRequestHandler]:
    """The request handler answering with ``script``."""

    class Scripted(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                self.send_error(404)
                return
            self._json({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self.send_error(404)
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not body.get("stream"):
                self._json(completion(body, script))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for chunk in chunks(body, script):
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

        def _json(self, data: dict[str, Any]) -> None:
            payload = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a loop's every turn would print a line."""

    return Scripted


def main(argv: list[str] | None = None) -> None:
    """Serve until stopped."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--script", type=Path, required=True, help="the bash the model runs")
    parser.add_argument("--port", type=int, default=8765, help="0 for any free port")
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(args.script.read_text()))
    print(f"scripted model on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
