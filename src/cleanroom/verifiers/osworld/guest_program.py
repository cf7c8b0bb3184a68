"""One way to run a stdlib program of cleanroom's in a guest and take its answer.

The Chrome, VLC and window helpers and the accessibility reader all run the same way:
the guest's system Python (`SYSTEM_PYTHON`, isolated with ``-I``) with the program's
source as ``-c`` and its arguments as argv elements, so no shell reads them; as the
guest's user, in its sandbox, under a wall-clock limit. The program runs among the
agent's programs, so its answer is data to check: `run` gives its raw output (bounded by
the guest's own output cap) and `run_json` one JSON object.

Each caller names its error class: a helper that cannot start, runs past its limit,
exits non-zero or prints no JSON object is raised as ``fails_as`` with a reason that
names the program, and the caller decides whose fault that is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from cleanroom.guests.base import CommandNotStarted, Guest, GuestTimeout
from cleanroom.verifiers.osworld.commands import decode_output
from cleanroom.verifiers.osworld.details import excerpt

SYSTEM_PYTHON = "/usr/bin/python3"
_STDERR_EXCERPT = 1000


def run(
    guest: Guest,
    source: str,
    args: Sequence[str],
    *,
    limit: float,
    what: str,
    fails_as: type[Exception],
) -> bytes:
    """Run ``source`` with ``args`` in ``guest`` within ``limit`` seconds; its standard
    output. ``what`` names the program in errors ("the VLC helper")."""
    argv = [SYSTEM_PYTHON, "-I", "-c", source, *args]
    try:
        result = guest.exec(argv, shell=False, timeout=limit)
    except CommandNotStarted as exc:
        raise fails_as(f"the guest cannot run {SYSTEM_PYTHON}: {exc.why}") from exc
    except GuestTimeout as exc:
        raise fails_as(f"{what} ran past its {limit:g} s limit") from exc
    if result.exit_code != 0:
        why = excerpt(decode_output(result.stderr), _STDERR_EXCERPT)
        raise fails_as(f"{what} failed ({result.exit_code}): {why}")
    return result.stdout


def run_json(
    guest: Guest,
    source: str,
    args: Sequence[str],
    *,
    limit: float,
    what: str,
    fails_as: type[Exception],
) -> dict[str, Any]:
    """`run`, and its output read as one JSON object."""
    stdout = run(guest, source, args, limit=limit, what=what, fails_as=fails_as)
    try:
        answer = json.loads(decode_output(stdout))
    except ValueError as exc:
        raise fails_as(f"{what} did not answer in JSON") from exc
    if not isinstance(answer, dict):
        raise fails_as(f"{what} answered {excerpt(repr(answer), 200)}")
    return answer
