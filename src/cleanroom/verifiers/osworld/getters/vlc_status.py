"""OSWorld's ``vlc_playing_info``: what VLC is playing, from its web interface.

OSWorld asks the VM's port 8080 for ``/requests/status.xml`` with the password
``password`` and saves the answer as ``dest``; the environment's VLC has its web
interface on with those settings (`cleanroom.environments.apps`). Here the helper
`guest_vlc` asks from inside the guest, where VLC runs.

OSWorld gives None for an answer other than 200. When nothing answers (the agent closed
VLC) OSWorld's getter raises and the run has no score; here that is what the agent left,
scored 0 as a missing result (`VlcNotAnswering`). The answer is bounded in size and time:
an answer over `STATUS_CAP_BYTES` (a title the agent chose can make it long) scores 0
the same way.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleanroom.environments import apps
from cleanroom.verifiers.osworld import guest_program
from cleanroom.verifiers.osworld.cached_file import CachedFile
from cleanroom.verifiers.osworld.commands import decode_output
from cleanroom.verifiers.osworld.details import excerpt
from cleanroom.verifiers.osworld.getters.core import (
    GetterContext,
    GetterFailed,
    UnreadableResult,
    cache_write,
)

HELPER = Path(__file__).parent.parent / "guest_vlc.py"
PORT = apps.VLC_HTTP_PORT  # OSWorld's vlc_port
STATUS_CAP_BYTES = 1 << 20  # VLC's status is a few kB; its titles are the agent's
CONNECT_S = 10.0
TOTAL_S = 30.0  # OSWorld's request has no limit; a VLC that hangs is the agent's
_GRACE_S = 30.0  # beyond the helper's own limit, for its start and its answer


class VlcNotAnswering(UnreadableResult):
    """Nothing answered on VLC's web interface, or its answer was too long or too slow:
    what the agent left, scored 0 as a missing result."""


@dataclass(frozen=True)
class VlcStatus:
    """VLC's answer: its HTTP status and body (at most the cap)."""

    status: int
    body: bytes


def parse_answer(stdout: bytes) -> VlcStatus:
    """The helper's printed answer as a `VlcStatus`; `VlcNotAnswering` when VLC did not
    answer in time or answered more than the cap, `GetterFailed` when the helper's own
    output is not the JSON it prints."""
    try:
        answer = json.loads(decode_output(stdout))
    except ValueError as exc:
        raise GetterFailed("the VLC helper did not answer in JSON") from exc
    if not isinstance(answer, dict) or not isinstance(answer.get("answered"), bool):
        raise GetterFailed(f"the VLC helper answered {excerpt(repr(answer), 200)}")
    if not answer["answered"]:
        why = excerpt(str(answer.get("why", "")), 300)
        raise VlcNotAnswering(f"VLC's web interface did not answer: {why}")
    if answer.get("over") is True:
        raise VlcNotAnswering(f"VLC's status is over {STATUS_CAP_BYTES} bytes")
    status, body = answer.get("status"), answer.get("body")
    if not isinstance(status, int) or not isinstance(body, str):
        raise GetterFailed(f"the VLC helper answered {excerpt(repr(answer), 200)}")
    try:
        return VlcStatus(status, base64.b64decode(body, validate=True))
    except binascii.Error as exc:
        raise GetterFailed("the VLC helper's body is not base64") from exc


def ask_vlc(ctx: GetterContext, port: int) -> VlcStatus:
    """VLC's status on ``port`` of the guest, asked by the helper as the guest's user."""
    args = {
        "port": port,
        "password": apps.VLC_HTTP_PASSWORD,
        "connect_s": CONNECT_S,
        "total_s": TOTAL_S,
        "max_bytes": STATUS_CAP_BYTES,
    }
    stdout = guest_program.run(
        ctx.guest,
        HELPER.read_text(),
        [json.dumps(args)],
        limit=TOTAL_S + _GRACE_S,
        what="the VLC helper",
        fails_as=GetterFailed,
    )
    return parse_answer(stdout)


def get_vlc_playing_info(ctx: GetterContext, config: dict[str, Any]) -> CachedFile | None:
    """VLC's ``status.xml`` saved as ``dest``; None when VLC answers other than 200 (a
    wrong password, say), as in OSWorld."""
    dest = config.get("dest")
    if not isinstance(dest, str):
        raise GetterFailed("vlc_playing_info needs a 'dest'")
    answer = ask_vlc(ctx, PORT)
    if answer.status != 200:
        return None
    return cache_write(ctx, dest, answer.body)
