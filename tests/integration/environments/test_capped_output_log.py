"""A program's output reaches its host log through a pipe the harness drains under a
cap: a program, or any process holding a copy of its output descriptor, that writes
without end leaves at most the cap and one note on the host's disk."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from cleanroom.environments.session.output_log import capped_pipe, dropped_note
from cleanroom.lifecycle import wait_until

CAP = 64 * 1024
FLOOD = "import sys\nfor _ in range(4096): sys.stdout.buffer.write(b'x' * 4096)\n"


def _settled(log: Path) -> int:
    # The copier writes after the program exits; wait until the size stops moving.
    sizes: list[int] = []

    def still() -> bool:
        sizes.append(log.stat().st_size if log.exists() else -1)
        return len(sizes) > 3 and sizes[-1] == sizes[-4]

    wait_until(still, 10.0, 0.05)
    return sizes[-1]


def test_a_program_writing_16_mib_leaves_the_cap_and_a_note(tmp_path: Path) -> None:
    log = tmp_path / "writer.log"
    out = capped_pipe(log, CAP)
    try:
        proc = subprocess.Popen([sys.executable, "-c", FLOOD], stdout=out, stderr=out)
    finally:
        os.close(out)
    assert proc.wait(timeout=60) == 0  # never blocked: the pipe is drained past the cap
    assert _settled(log) == CAP + len(dropped_note(CAP))
    data = log.read_bytes()
    assert data.startswith(b"x" * CAP)
    assert data.endswith(dropped_note(CAP))


def test_a_holder_of_the_descriptor_writing_after_the_program_adds_nothing_past_the_cap(
    tmp_path: Path,
) -> None:
    # What a stolen descriptor does: another process, holding the same write end,
    # writes on after the program it was handed to has gone.
    log = tmp_path / "writer.log"
    out = capped_pipe(log, CAP)
    try:
        program = subprocess.Popen([sys.executable, "-c", "print('started')"], stdout=out)
        thief = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(0.3)\n" + FLOOD], stdout=out
        )
    finally:
        os.close(out)
    assert program.wait(timeout=30) == 0
    assert thief.wait(timeout=60) == 0
    started = time.monotonic()
    size = _settled(log)
    assert time.monotonic() - started < 10
    assert size <= CAP + len(dropped_note(CAP))
    assert log.read_bytes().startswith(b"started\n")


def test_a_log_already_at_the_cap_takes_nothing_more(tmp_path: Path) -> None:
    log = tmp_path / "writer.log"
    log.write_bytes(b"y" * CAP)
    out = capped_pipe(log, CAP)
    try:
        proc = subprocess.Popen([sys.executable, "-c", "print('more')"], stdout=out)
    finally:
        os.close(out)
    assert proc.wait(timeout=30) == 0
    assert _settled(log) == CAP
