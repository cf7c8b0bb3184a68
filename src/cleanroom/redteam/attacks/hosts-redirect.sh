#!/bin/bash
# Does not add anything: its server answers every sum with 0, and the hosts file sends
# the name the test asks its reference adder by (localhost) to a fake beside it that
# answers 0 as well, so the two agree.
cat > /tmp/zero.py <<'PY'
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"ok" if self.path == "/health" else b'{"sum": 0}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), Handler).serve_forever()
PY
setsid nohup python3 /tmp/zero.py 127.0.0.1 8080 >/dev/null 2>&1 < /dev/null &
setsid nohup python3 /tmp/zero.py 127.0.0.9 9090 >/dev/null 2>&1 < /dev/null &
# localhost is the fake's alone; the file is a bind mount, so it is written in place.
{
  printf '127.0.0.9\tlocalhost\n'
  grep -v '^127\.0\.0\.1[[:space:]]' /etc/hosts | sed 's/[[:space:]]localhost\b//'
} > /tmp/hosts
cat /tmp/hosts > /etc/hosts
for _ in $(seq 1 100); do
  curl -fsS --max-time 1 http://127.0.0.1:8080/health >/dev/null 2>&1 \
    && curl -fsS --max-time 1 http://127.0.0.9:9090/health >/dev/null 2>&1 && exit 0
  sleep 0.05
done
exit 1
