"""Every 2xx is a stored row: a verify server killed with SIGKILL while submissions are
in flight has every row it answered 2xx for, byte for byte, when its database is opened
again."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import httpx

from cleanroom.core.tokens import mint
from cleanroom.store.submissions import SubmissionStore
from cleanroom.verify_server.process import VerifyServerProcess

_SUBMISSION_ID = re.compile(rb'<span id="submission">(\d+)</span>')
SENDERS = 16
ANSWERED_BEFORE_KILL = 600


def test_every_2xx_row_survives_a_sigkill_right_after_the_responses(tmp_path: Path) -> None:
    server = VerifyServerProcess.start(tmp_path / "server")
    with server.client() as client:
        lease = client.lease(mint("env01-w001-r0001"), ttl_s=600)
    url = f"{server.url}/v1/form/{lease.lease_id}"
    answered: dict[int, bytes] = {}  # submission id -> the text its 2xx confirmed
    lock = threading.Lock()
    enough = threading.Event()

    def send(sender: int) -> None:
        with httpx.Client(timeout=5.0, trust_env=False) as http:
            for n in range(100_000):
                text = f"{lease.token} sender {sender} submission {n}".encode()
                try:
                    r = http.post(url, data={"token": text.decode()})
                except httpx.TransportError:
                    return  # the server is gone
                if r.status_code // 100 == 2:
                    m = _SUBMISSION_ID.search(r.content)
                    assert m is not None
                    with lock:
                        answered[int(m[1])] = text
                        if len(answered) >= ANSWERED_BEFORE_KILL:
                            enough.set()

    senders = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(SENDERS)]
    try:
        for t in senders:
            t.start()
        assert enough.wait(60), f"only {len(answered)} submissions answered in 60 s"
        server.kill()  # SIGKILL with requests still in flight
        for t in senders:
            t.join(10)
        assert not server.alive()
    finally:
        server.stop()

    with SubmissionStore.open_read_only(server.db) as db:
        stored = {s.id: s.body for s in db.submissions(lease.lease_id)}
    missing = [sid for sid in answered if sid not in stored]
    assert missing == [], f"{len(missing)} answered 2xx but not stored"
    assert all(stored[sid] == text for sid, text in answered.items())
    assert len(answered) >= ANSWERED_BEFORE_KILL
