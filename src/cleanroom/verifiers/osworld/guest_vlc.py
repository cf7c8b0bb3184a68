"""VLC's web interface status, for the ``vlc_playing_info`` getter: run by the system
Python in the guest, never imported by the package.

It runs as the guest's user, in its sandbox, and asks ``127.0.0.1:<port>`` for
``/requests/status.xml`` with HTTP basic authentication (an empty user and the
password), as OSWorld's getter asks the VM. It takes its arguments as one JSON object in
argv, ``{"port", "password", "connect_s", "total_s", "max_bytes"}``, and prints one JSON
object:

    {"answered": true, "status": 200, "body": <base64>, "over": false}
    {"answered": false, "why": "..."}   (nothing answered, or no whole answer in time)

VLC shows what the agent chose to play, so the answer is bounded: its body to
``max_bytes`` (``over`` says more came) and the whole exchange to ``total_s`` seconds.
"""

from __future__ import annotations

import base64
import http.client
import json
import sys
import time
from typing import Any

HOST = "127.0.0.1"
PATH = "/requests/status.xml"
_CHUNK = 1 << 16


def status(args: dict[str, Any]) -> dict[str, Any]:
    """Ask VLC once; what it answered, or why nothing usable came."""
    deadline = time.monotonic() + float(args["total_s"])
    limit = int(args["max_bytes"])
    token = base64.b64encode(f":{args['password']}".encode()).decode()
    conn = http.client.HTTPConnection(HOST, int(args["port"]), timeout=float(args["connect_s"]))
    try:
        conn.request("GET", PATH, headers={"Authorization": f"Basic {token}"})
        sock = conn.sock  # the response keeps reading it after the connection hands it over
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        response = conn.getresponse()
        body = bytearray()
        while len(body) <= limit:
            left = deadline - time.monotonic()
            if left <= 0:
                return {"answered": False, "why": f"no whole answer in {args['total_s']} s"}
            sock.settimeout(left)
            chunk = response.read1(_CHUNK)
            if not chunk:
                break
            body += chunk
    except (OSError, http.client.HTTPException) as exc:
        return {"answered": False, "why": f"{type(exc).__name__}: {exc}"}
    finally:
        conn.close()
    over = len(body) > limit
    return {
        "answered": True,
        "status": response.status,
        "body": base64.b64encode(bytes(body[:limit])).decode(),
        "over": over,
    }


def main(argv: list[str]) -> int:
    """Print the answer for the JSON arguments in ``argv[0]``."""
    print(json.dumps(status(json.loads(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
