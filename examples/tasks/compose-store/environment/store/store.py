"""A key-value store over HTTP: GET and PUT /kv/KEY, GET /health and /frozen.

Once /srv/frozen exists (the task's collect hook makes it) every write is refused.
"""

import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FROZEN = "/srv/frozen"
values: dict[str, bytes] = {}


class Store(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/health":
            self._answer(200, b"ok")
        elif self.path == "/frozen":
            self._answer(200, b"yes" if os.path.exists(FROZEN) else b"no")
        elif self.path.startswith("/kv/") and self.path[4:] in values:
            self._answer(200, values[self.path[4:]])
        else:
            self._answer(404, b"not found")

    def do_PUT(self) -> None:
        if not self.path.startswith("/kv/") or len(self.path) == 4:
            self._answer(404, b"not found")
            return
        if os.path.exists(FROZEN):
            self._answer(403, b"frozen")
            return
        length = int(self.headers.get("Content-Length") or 0)
        values[self.path[4:]] = self.rfile.read(length).strip()
        self._answer(204, b"")

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


ThreadingHTTPServer(("0.0.0.0", int(os.environ["STORE_PORT"])), Store).serve_forever()
