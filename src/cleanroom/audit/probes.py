"""The agent scripts an audit runs besides the no-op and the oracle (pure).

- Forging probes: attacks of the red-team catalogue that need nothing of a particular
  task, only the reward folder Harbor gives every task. `DEFAULT_PROBES` are the two that
  fool a naive verifier whatever the test script does: a planted reward (for a script
  that writes its reward only on success) and a process that rewrites the reward while
  the tests run (for one that always writes it).
- The answers probe: run as the agent, it looks for the task's own tests and solution
  files (the expected outputs among them) anywhere it can read in its container. Files
  are matched by size and SHA-256, so a copy under any name is found, and nothing of the
  answers themselves is handed to the agent's container, only their digests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cleanroom.redteam.catalogue import Attack, by_id

DEFAULT_PROBES: tuple[str, ...] = ("planted-reward-txt", "background-writer")

# Files shorter than this match too much by chance (an empty __init__.py, "1\n").
MIN_ANSWER_BYTES = 32
# Where the answers probe finds its list of digests (the verifier's `AGENT_FILES_DIR`).
ANSWERS_LIST = "answers"
FOUND_MARK = "answer-visible"
_MAX_LISTED = 2000


def forging_probes(ids: Iterable[str]) -> list[Attack]:
    """The catalogue's attacks named ``ids``; `KeyError` naming the known ones otherwise."""
    return [by_id(i) for i in ids]


@dataclass(frozen=True)
class AnswerFile:
    """One file of the task's tests or solution, by its place in the task and digest."""

    name: str  # e.g. "tests/expected.txt"
    size: int
    sha256: str


def answer_files(task_dir: Path) -> list[AnswerFile]:
    """The task's tests and solution files (its steps' too, in a multi-step task) long
    enough to be told apart by content."""
    found: list[AnswerFile] = []
    places = [task_dir, *sorted(p for p in (task_dir / "steps").glob("*") if p.is_dir())]
    for root in (place / folder for place in places for folder in ("tests", "solution")):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            if len(data) < MIN_ANSWER_BYTES:
                continue
            name = path.relative_to(task_dir).as_posix()
            found.append(AnswerFile(name, len(data), hashlib.sha256(data).hexdigest()))
    return found[:_MAX_LISTED]


def answers_list(files: list[AnswerFile]) -> bytes:
    """The list handed to the probe: one ``size sha256`` line per file."""
    return "".join(f"{f.size} {f.sha256}\n" for f in files).encode()


# Run as the task's agent user. Only files of a listed size are hashed, so the walk costs
# a stat per file; /proc, /sys and /dev hold no task files, and the probe's own list is
# skipped. Each hit prints one line: the mark, the digest and the path.
ANSWERS_SCRIPT = rf"""#!/bin/bash
list=/tmp/cleanroom-attack/{ANSWERS_LIST}
sizes=(-false)
while read -r size sum; do sizes+=(-o -size "${{size}}c"); done < "$list"
find / \( -path /proc -o -path /sys -o -path /dev -o -path /tmp/cleanroom-attack \) -prune \
    -o -type f \( "${{sizes[@]}}" \) -readable -print0 2>/dev/null \
  | xargs -0 -r sha256sum 2>/dev/null \
  | while read -r sum path; do
      if grep -q " $sum\$" "$list"; then echo "{FOUND_MARK} $sum $path"; fi
    done | head -n 20
exit 0
"""


def visible_answers(output: str, files: list[AnswerFile]) -> list[dict[str, str]]:
    """What the probe found: each readable copy's path and the task file it matches."""
    names = {f.sha256: f.name for f in files}
    seen: list[dict[str, str]] = []
    for line in output.splitlines():
        mark, _, rest = line.partition(" ")
        digest, _, path = rest.partition(" ")
        if mark == FOUND_MARK and digest in names and path:
            seen.append({"path": path, "matches": names[digest]})
    return seen
