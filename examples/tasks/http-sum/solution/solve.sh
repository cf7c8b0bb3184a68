#!/bin/bash
set -euo pipefail
cat > /app/server.py <<'PY'
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/health":
            self.reply(b"ok", "text/plain")
        elif url.path == "/sum":
            q = parse_qs(url.query)
            total = int(q["a"][0]) + int(q["b"][0])
            self.reply(json.dumps({"sum": total}).encode(), "application/json")
        else:
            self.send_error(404)

    def reply(self, body, kind):
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", 8080), Handler).serve_forever()
PY
# Detached from this shell, with no inherited output, so it outlives the agent's turn.
setsid nohup python3 /app/server.py >/app/server.log 2>&1 < /dev/null &
for _ in $(seq 1 100); do
  curl -fsS --max-time 1 http://127.0.0.1:8080/health >/dev/null 2>&1 && exit 0
  sleep 0.05
done
echo "server did not come up" >&2
exit 1
