"""What the runner witness saw of each pytest run in a sealed verifier, and whether it
contradicts the reward test.sh wrote.

The witness (``python_guard/witness.py``, loaded by the start-up hook into the one pytest
process test.sh starts) writes JSON lines to a folder bound from the host. This module
turns those lines into typed records (`run.witness_folder` reads the folder, only after the
verifier's container is stopped, each file no-follow, non-blocking and under a cap).

A contradiction is a pytest process that did not end the way a pytest run ends, or whose
result code of the agent's decided:

- it started a session and never finished it (a module under test that calls
  ``os._exit(0)`` or ``os.execv`` at import, or from a test);
- it never reached the interpreter's normal end (an exit handler that ends the process
  with a status of its own);
- pytest finished with status 0 although the witness saw a test fail;
- a test file outside the agent's state was skipped, expected to fail or had pytest exit
  from code of the agent's state (``pytest.skip()`` in the module under test, a
  ``pytest.exit(returncode=0)`` at its import): pytest's status then says nothing of
  the task's tests.
 test.sh's exit and its reward then say nothing
about the tests, and a success it claims is the agent's 0 (`Reason.RUNNER_CUT_SHORT`).
Only a success is judged: a run that failed failed whatever its witness says.

Every line is the agent's data (its code runs in the process that writes them), so each is
parsed under bounds: at most `MAX_LINE_BYTES`, strict UTF-8, nested at most `MAX_DEPTH`
deep. A line past them, or one no JSON parser reads as a record, is none the witness
writes: it contradicts the run (`RunnerRun.unreadable_lines`), never an error of the
harness's.

What the witness cannot see: code of the agent's that runs inside the pytest process
can do whatever that process can, including writing the witness's own records before it
exits, patching pytest's hooks, or editing the test module's functions in memory. The
witness closes the cheap route (the process cut short), not in-process deception.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from typing import Any

from cleanroom.core.paths import under_any

MAX_AGENT_OUTCOMES = 100
# The witness's longest line (``start``: 32 arguments of 300 characters, each escaped to
# at most 6 bytes) is under 64 KiB; its records nest two deep.
MAX_LINE_BYTES = 256 << 10
MAX_DEPTH = 8
_RAISED = {"skip": "a skip", "xfail": "an expected failure", "exit": "pytest's exit"}
# pytest's exit statuses the witness reads (``pytest.ExitCode``).
_OK = 0


@dataclass(frozen=True)
class AgentOutcome:
    """A skip, an expected failure or an exit of pytest's raised while code of the
    agent's state ran: ``origin`` is that code's file, ``node`` the test file pytest was
    collecting or running."""

    kind: str
    origin: str
    node: str


def _in_any(path: str, folders: tuple[str, ...]) -> bool:
    norm = posixpath.normpath(path) if path else ""
    return under_any(norm, folders)


@dataclass(frozen=True)
class AgentTouch:
    """Code of the agent's (``origin``) touching a verifier's place (``path``) through
    ``event`` (an audit event: ``open``, ``os.rename``, ...) while pytest ran."""

    event: str
    path: str
    origin: str

    def __str__(self) -> str:
        return f"{self.path} ({self.event} from {self.origin})"


@dataclass(frozen=True)
class RunnerRun:
    """One pytest process, as its witness recorded it."""

    pid: int
    argv: tuple[str, ...] = ()
    configured: bool = False
    session_started: bool = False
    collected: int | None = None
    finished: bool = False
    exit_status: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    exited: bool = False
    agent_outcomes: tuple[AgentOutcome, ...] = ()
    touches: tuple[AgentTouch, ...] = ()
    # Records that were not of this process (another pid's, an event no witness writes).
    foreign_lines: int = 0
    # Lines that were no record at all: too long, too deep, not UTF-8, not a JSON object.
    unreadable_lines: int = 0
    unreadable_first: str = ""

    def contradiction(self, state_paths: tuple[str, ...]) -> str | None:
        """Why this run does not end as a pytest run ends, or why its result is the
        agent's code's (``state_paths``: what the verifier got of the agent's), or None."""
        what = f"pytest (pid {self.pid})"
        if self.unreadable_lines:
            return (
                f"{what}'s witness record holds {self.unreadable_lines} line(s) the witness "
                f"never writes ({self.unreadable_first}): code in the process wrote them"
            )
        if self.session_started and not self.finished:
            seen = f"collected {self.collected} test(s)" if self.collected is not None else ""
            ran = sum(self.counts.values())
            return (
                f"{what} started its session and never finished it"
                f"{' (' + seen + ')' if seen else ''}{f', {ran} report(s)' if ran else ''}: "
                f"the process ended before its tests did"
            )
        if not self.exited:
            after = (
                f" after pytest finished with status {self.exit_status}" if self.finished else ""
            )
            return (
                f"{what} never reached the interpreter's normal end{after}: code it ran "
                f"ended the process (an exit status of its own)"
            )
        failed = self.counts.get("failed", 0)
        if self.finished and self.exit_status == _OK and failed:
            return (
                f"{what} finished with status 0 although the witness saw {failed} failed "
                f"test report(s)"
            )
        for made in self.agent_outcomes:
            if _in_any(made.origin, state_paths) and not _in_any(made.node, state_paths):
                raised = _RAISED.get(made.kind, f"a {made.kind!r}")
                return (
                    f"in {what}, code of the agent's ({made.origin}) raised {raised} while "
                    f"pytest was on the task's tests ({made.node or 'no file'})"
                )
        return None

    def summary(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "argv": list(self.argv[:8]),
            "collected": self.collected,
            "finished": self.finished,
            "exit_status": self.exit_status,
            "counts": self.counts,
            "exited": self.exited,
            "unreadable_lines": self.unreadable_lines,
            "touched": [str(t) for t in self.touches[:8]],
            "agent_outcomes": [
                {"kind": a.kind, "origin": a.origin, "node": a.node}
                for a in self.agent_outcomes[:8]
            ],
        }


@dataclass(frozen=True)
class WitnessReport:
    """Every pytest process the witness saw in one verifier run."""

    runs: tuple[RunnerRun, ...] = ()
    # What the verifier got of the agent's: code there is the agent's.
    state_paths: tuple[str, ...] = ()
    # Names in the witness folder no witness writes, and runs beyond the cap
    # (`run.witness_folder.MAX_RUNS`): noted, never read.
    unread: tuple[str, ...] = ()
    # A witness's file that is no regular file under the cap (a link, a FIFO, a file too
    # large): the witness never makes one, so something else in the process did.
    spoiled: tuple[str, ...] = ()

    @property
    def touched(self) -> tuple[str, ...]:
        """What code of the agent's touched in the verifier's places, one line each: the
        agent's ``tamper``, whatever the reward."""
        return tuple(
            str(t) for run in self.runs for t in run.touches if _in_any(t.origin, self.state_paths)
        )

    @property
    def contradiction(self) -> str | None:
        """The first run's contradiction, or None when every run ended as pytest does."""
        if self.spoiled:
            return (
                f"the runner witness's record {self.spoiled[0]} was replaced by something "
                f"the witness never writes"
            )
        for run in self.runs:
            why = run.contradiction(self.state_paths)
            if why is not None:
                return why
        return None

    def summary(self) -> dict[str, Any]:
        found: dict[str, Any] = {"runs": [r.summary() for r in self.runs]}
        if self.unread:
            found["unread"] = list(self.unread[:8])
        if self.spoiled:
            found["spoiled"] = list(self.spoiled[:8])
        return found


def parse_run(pid: int, data: bytes) -> RunnerRun:
    """The run recorded in one witness file, written by process ``pid``."""
    fields: dict[str, Any] = {"pid": pid}
    made: list[AgentOutcome] = []
    touches: list[AgentTouch] = []
    foreign = unreadable = 0
    first_unreadable = ""
    for raw in data.splitlines():
        record = read_line(raw)
        if isinstance(record, Unreadable):
            unreadable += 1
            first_unreadable = first_unreadable or record.why
            continue
        if record.get("pid") != pid:
            foreign += 1
            continue
        event = record.get("e")
        if event == "start":
            argv = record.get("argv")
            if isinstance(argv, list):
                fields["argv"] = tuple(str(a) for a in argv)
        elif event == "configured":
            fields["configured"] = True
        elif event == "sessionstart":
            fields["session_started"] = True
        elif event == "collected":
            fields["collected"] = _count(record.get("n"))
        elif event == "finish":
            fields["finished"] = True
            fields["exit_status"] = _count(record.get("exitstatus"))
            counts = record.get("counts")
            if isinstance(counts, dict):
                fields["counts"] = {
                    str(k)[:32]: n
                    for k, v in list(counts.items())[:16]
                    if (n := _count(v)) is not None
                }
        elif event == "exit":
            fields["exited"] = True
        elif event == "agent_outcome" and len(made) < MAX_AGENT_OUTCOMES:
            made.append(
                AgentOutcome(
                    str(record.get("kind", ""))[:16],
                    str(record.get("origin", ""))[:300],
                    str(record.get("node", ""))[:300],
                )
            )
        elif event == "agent_write" and len(touches) < MAX_AGENT_OUTCOMES:
            touches.append(
                AgentTouch(
                    str(record.get("via", ""))[:32],
                    str(record.get("path", ""))[:300],
                    str(record.get("origin", ""))[:300],
                )
            )
        elif event != "report":
            foreign += 1
    return RunnerRun(
        **fields,
        agent_outcomes=tuple(made),
        touches=tuple(touches),
        foreign_lines=foreign,
        unreadable_lines=unreadable,
        unreadable_first=first_unreadable,
    )


@dataclass(frozen=True)
class Unreadable:
    """A witness line that is no record: ``why``, for people."""

    why: str


def read_line(raw: bytes) -> dict[str, Any] | Unreadable:
    """One witness line as its record, or `Unreadable` when it is none: checked for
    length, encoding and depth before any parser sees it, so no line can make the
    parser raise anything but what is caught here."""
    if len(raw) > MAX_LINE_BYTES:
        return Unreadable(f"a line of {len(raw)} bytes, over {MAX_LINE_BYTES}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Unreadable("a line that is not UTF-8")
    # Counting first spares the scan for every line the witness itself writes.
    few = text.count("[") + text.count("{") <= MAX_DEPTH
    if not few and nesting_depth(text) > MAX_DEPTH:
        return Unreadable(f"a line nested over {MAX_DEPTH} deep")
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: the depth check's backstop
        return Unreadable("a line that is not JSON")
    if not isinstance(record, dict):
        return Unreadable("a JSON line that is not an object")
    return record


def nesting_depth(text: str) -> int:
    """How deep brackets and braces nest in ``text`` outside JSON strings (for JSON it
    is the depth a parser recurses to; for anything else, a bound all the same)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value < 1 << 31 else None
