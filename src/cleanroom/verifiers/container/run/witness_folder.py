"""Reading the runner witness's folder on the host, once nothing runs in the verifier's
container: the effect beside `decision.witness`, which gives the lines their meaning."""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

from cleanroom.core.observed_file import FileKind
from cleanroom.host_files import read_capped
from cleanroom.verifiers.container.decision.witness import RunnerRun, WitnessReport, parse_run

# One witness file per pytest process; more than this many is not read.
MAX_RUNS = 64
WITNESS_CAP_BYTES = 4 << 20
FILE_NAME = re.compile(r"^([0-9]{1,10})\.jsonl$")
# Entries of the witness folder looked at, at most (its files are written by the
# verifier's processes, so code of the agent's running there could fill it).
MAX_ENTRIES = 4 * MAX_RUNS


def read_witness(folder: Path, state_paths: list[str]) -> WitnessReport:
    """What the witness wrote to ``folder`` (the host's side of its bound folder), read
    once nothing runs in the verifier's container: names in the folder are looked at up
    to `MAX_ENTRIES`, each file no-follow and under `WITNESS_CAP_BYTES`."""
    runs: list[RunnerRun] = []
    unread: list[str] = []
    spoiled: list[str] = []
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        with os.scandir(fd) as entries:
            names = []
            for n, entry in enumerate(entries):
                if n >= MAX_ENTRIES:
                    unread.append(f"more than {MAX_ENTRIES} entries")
                    break
                names.append(entry.name)
    finally:
        os.close(fd)
    for name in sorted(names):
        matched = FILE_NAME.match(name)
        if matched is None or len(runs) >= MAX_RUNS:
            unread.append(name[:80])
            continue
        found = read_capped(folder, name, name, WITNESS_CAP_BYTES)
        if found.kind is not FileKind.REGULAR:
            spoiled.append(f"{name} ({found.note or found.kind.value})")
            continue
        runs.append(parse_run(int(matched.group(1)), found.data))
    state = tuple(posixpath.normpath(p) for p in state_paths)
    return WitnessReport(tuple(runs), state, tuple(unread), tuple(spoiled))
