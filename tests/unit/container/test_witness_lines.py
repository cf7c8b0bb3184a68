"""Every runner witness line is the agent's data: whatever a line holds, reading it never
raises, and a line the witness never writes is the agent's 0, never `invalid`."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cleanroom.core.observed_file import FileKind, ObservedFile
from cleanroom.core.outcomes import Cause, Reason, Status
from cleanroom.verifiers.container.decision.verdict import Evidence, decide
from cleanroom.verifiers.container.decision.witness import (
    MAX_DEPTH,
    MAX_LINE_BYTES,
    Unreadable,
    parse_run,
    read_line,
)
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.run.witness_folder import read_witness

PID = 7
# A run that ended as a pytest run ends: what the junk lines are added to.
HONEST = [
    b'{"e":"start","pid":7,"argv":["pytest"]}',
    b'{"e":"configured","pid":7}',
    b'{"e":"sessionstart","pid":7}',
    b'{"e":"collected","pid":7,"n":1}',
    b'{"e":"report","pid":7,"nodeid":"t.py::t","when":"call","outcome":"passed"}',
    b'{"e":"finish","pid":7,"exitstatus":0,"counts":{"passed":1},"reports":1}',
    b'{"e":"exit","pid":7}',
]


def deep(depth: int, opener: bytes = b"[") -> bytes:
    closer = b"]" if opener == b"[" else b"}"
    if opener == b"{":
        return b'{"a":' * depth + b"1" + closer * depth
    return opener * depth + closer * depth


def truncated(line: bytes) -> st.SearchStrategy[bytes]:
    return st.integers(1, len(line) - 1).map(lambda k: line[:k])


junk_lines = st.one_of(
    st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b"")),
    st.integers(MAX_DEPTH + 1, 200_000).map(deep),
    st.integers(MAX_DEPTH + 1, 200_000).map(lambda n: deep(n, b"{")),
    st.integers(1, 20_000).map(lambda n: b'{"e":"collected","pid":7,"n":' + b"9" * n + b"}"),
    st.integers(1, 20_000).map(
        lambda n: b'{"e":"finish","pid":7,"exitstatus":1e' + b"9" * n + b"}"
    ),
    st.sampled_from([b"\xff\xfe{", b'{"e":"exit","pid":7,"x":"\xc3"}', b"\xed\xa0\x80"]),
    st.sampled_from(HONEST).flatmap(truncated),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(junk_lines, min_size=1, max_size=4), st.integers(0, len(HONEST)))
def test_no_witness_line_makes_reading_raise(junk: list[bytes], at: int) -> None:
    data = b"\n".join([*HONEST[:at], *junk, *HONEST[at:]])

    run = parse_run(PID, data)

    assert run.pid == PID
    run.summary()


@settings(max_examples=300, deadline=None)
@given(junk_lines)
def test_a_line_the_witness_never_writes_contradicts_a_claimed_success(line: bytes) -> None:
    # Given an honest run and one more line that is no record of the witness's
    assume(line)  # an empty last line is the file's final newline
    record = read_line(line)
    if not isinstance(record, Unreadable):
        return  # junk that happens to be a JSON object: judged as a record (foreign or not)
    ev = success_with_witness_file(b"\n".join([*HONEST, line]))

    outcome = decide(ev)

    assert outcome.status is Status.FAILURE
    assert outcome.reason is Reason.RUNNER_CUT_SHORT
    assert outcome.caused_by is Cause.AGENT


def success_with_witness_file(data: bytes) -> Evidence:
    """A verifier that wrote a reward of 1, its witness folder holding ``data``."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / f"{PID}.jsonl").write_bytes(data)
        witness = read_witness(Path(tmp), ["/app"])
    text = ObservedFile("/logs/verifier/reward.txt", FileKind.REGULAR, b"1", 1)
    return Evidence(
        Mode.SEALED,
        test_exit_code=0,
        json_file=ObservedFile.missing("/logs/verifier/reward.json"),
        text_file=text,
        witness=witness,
    )


def test_the_honest_witness_lines_contradict_nothing() -> None:
    outcome = decide(success_with_witness_file(b"\n".join(HONEST) + b"\n"))

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)


def test_a_deeply_nested_line_is_unreadable_not_a_recursion_error() -> None:
    assert isinstance(read_line(deep(100_000)), Unreadable)
    assert isinstance(read_line(deep(100_000, b"{")), Unreadable)


def test_brackets_inside_strings_are_no_nesting() -> None:
    line = json.dumps({"e": "report", "pid": PID, "nodeid": "[" * 5000}).encode()

    assert read_line(line) == json.loads(line)


def test_a_line_over_the_length_bound_is_unreadable() -> None:
    line = b'{"e":"report","pid":7,"nodeid":"' + b"x" * MAX_LINE_BYTES + b'"}'

    found = read_line(line)

    assert isinstance(found, Unreadable)
    assert "bytes" in found.why


def test_the_witnesss_longest_line_is_within_the_bounds() -> None:
    # ``start`` with 32 arguments of 300 characters that each escape to 6 bytes.
    argv = ["\x01" * 300] * 32
    line = json.dumps({"argv": argv, "e": "start", "pid": PID}, ensure_ascii=False).encode()

    assert read_line(line) == {"argv": argv, "e": "start", "pid": PID}


def test_a_truncated_record_is_unreadable() -> None:
    assert isinstance(read_line(HONEST[-2][:-5]), Unreadable)


def test_non_utf8_bytes_are_unreadable() -> None:
    assert isinstance(read_line(b'{"e":"exit","pid":7,"x":"\xff"}'), Unreadable)
