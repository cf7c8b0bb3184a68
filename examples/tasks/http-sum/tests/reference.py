"""The reference adder the test compares the agent's server with: listens on
127.0.0.1:9090, prints "ready" once it does, and exits 1 when it cannot."""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urlparse(self.path)
        if url.path != "/sum":
            self.send_error(404)
            return
        q = parse_qs(url.query)
        body = json.dumps({"sum": int(q["a"][0]) + int(q["b"][0])}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


try:
    server = ThreadingHTTPServer(("127.0.0.1", 9090), Handler)
except OSError as exc:
    print(f"the reference cannot listen: {exc}", flush=True)
    sys.exit(1)
print("ready", flush=True)
server.serve_forever()
