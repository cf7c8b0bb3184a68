"""What one command did: the one record of a command's end, wherever it ran."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExecResult:
    """What one command did, in a container or in a guest.

    ``exit_code`` is None when the command was still running at its time limit
    (``timed_out``) or the daemon never said how it ended; a guest returns only commands
    that ended (it raises otherwise). ``output`` is stdout and stderr interleaved as they
    arrived (containers only); ``seconds`` is its wall time.
    """

    exit_code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    output: bytes = b""
    timed_out: bool = False
    seconds: float = 0.0
    exec_id: str = ""
