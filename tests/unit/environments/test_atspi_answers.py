"""What the harness takes from an AT-SPI reader, which runs in the agent's trust domain:
one answer, bounded in bytes and time, and a tree only when it is the XML the reader
writes. Fake readers are real processes that print junk."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import time
from typing import Any, cast

import pytest

from cleanroom.environments.session.login import Session
from cleanroom.environments.x11 import atspi
from cleanroom.environments.x11.atspi import (
    AtspiReader,
    AtspiUnavailable,
    checked_tree,
    read_answer,
    send_request,
)

NS = 'xmlns:st="https://accessibility.ubuntu.example.org/ns/state"'
GOOD_TREE = (
    f'<desktop-frame {NS}><application name="soffice"><frame name="a &amp; b" st:active="true">'
    '<paragraph name="" st:focused="true">x &lt;y&gt; &#10;</paragraph><separator name=""/>'
    "</frame></application></desktop-frame>"
)


class FakeSession:
    """Runs a given script instead of the reader, as `Session.spawn` would run it."""

    def __init__(self, script: str) -> None:
        self.script = textwrap.dedent(script)
        self.started = 0

    def environ(self) -> dict[str, str]:
        return dict(os.environ)

    def spawn(self, argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        self.started += 1
        return subprocess.Popen(
            [sys.executable, "-c", self.script], stdin=kw["stdin"], stdout=kw["stdout"]
        )


def reader_printing(script: str) -> tuple[AtspiReader, FakeSession]:
    session = FakeSession(script)
    return AtspiReader(cast(Session, session)), session


def answering(line: str) -> str:
    """A reader script that answers every request with ``line``, one byte a character
    (so "\\u00ff" is the byte 0xff, never UTF-8)."""
    return f"""
    import sys
    for _ in sys.stdin:
        sys.stdout.buffer.write({line!r}.encode("latin-1") + b"\\n")
        sys.stdout.flush()
    """


# -- one answer, bounded ----------------------------------------------------------------


def pipe_with(data: bytes) -> int:
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    return r


def test_one_whole_answer_is_read_without_its_newline() -> None:
    fd = pipe_with(b'{"ok": true}\n')
    assert read_answer(fd, time.monotonic() + 5, 100) == b'{"ok": true}'
    os.close(fd)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"x" * 5000, "over 100 bytes"),
        (b"x" * 101 + b"\n", "over 100 bytes"),
        (b'{"ok": true}\n{"ok": true}\n', "more than one answer"),
        (b'{"ok": tr', "exited"),
    ],
)
def test_an_answer_too_long_doubled_or_cut_off_is_refused(data: bytes, why: str) -> None:
    fd = pipe_with(data)
    with pytest.raises(AtspiUnavailable, match=why):
        read_answer(fd, time.monotonic() + 5, 100)
    os.close(fd)


def test_an_answer_trickling_in_without_its_end_is_given_up_at_the_deadline() -> None:
    r, w = os.pipe()
    os.write(w, b'{"ok": ')
    started = time.monotonic()
    with pytest.raises(AtspiUnavailable, match="no whole answer in time"):
        read_answer(r, started + 0.3, 100)
    assert time.monotonic() - started < 2
    os.close(r)
    os.close(w)


def test_a_request_to_a_reader_that_reads_none_is_given_up_at_the_deadline() -> None:
    r, w = os.pipe()
    os.set_blocking(w, False)
    with contextlib.suppress(BlockingIOError):
        while True:
            os.write(w, b"x" * 65536)
    os.set_blocking(w, True)
    started = time.monotonic()
    with pytest.raises(AtspiUnavailable, match="takes no request"):
        send_request(w, b'{"op": "ping"}\n', started + 0.3)
    assert time.monotonic() - started < 2
    os.close(r)
    os.close(w)


# -- a reader printing junk -------------------------------------------------------------


def test_a_reader_printing_an_endless_line_is_cut_off_and_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(atspi, "MAX_ANSWER_BYTES", 64 * 1024)
    reader, session = reader_printing(
        """
        import sys
        sys.stdin.readline()
        while True:
            sys.stdout.write("x" * 65536)
        """
    )
    with pytest.raises(AtspiUnavailable, match="over 65536 bytes"):
        reader.request("ping")
    assert session.started == 2  # refused, restarted once, refused again
    assert reader._proc is None  # and ended
    reader.close()


def test_a_reader_that_never_finishes_its_answer_is_given_up() -> None:
    reader, _ = reader_printing(
        """
        import sys, time
        sys.stdin.readline()
        sys.stdout.write('{"ok": true')
        sys.stdout.flush()
        time.sleep(60)
        """
    )
    started = time.monotonic()
    with pytest.raises(AtspiUnavailable, match="no whole answer in time"):
        reader.request("ping", timeout_s=0.5)
    assert time.monotonic() - started < 10
    reader.close()


@pytest.mark.parametrize(
    "line",
    ["not json", "[1, 2]", "\u00ff\u00fe", "[" * 20_000 + "]" * 20_000, '{"ok": false}'],
    ids=["not-json", "a-list", "not-utf8", "nested-deep", "not-ok"],
)
def test_an_answer_that_is_no_answer_is_refused(line: str) -> None:
    reader, _ = reader_printing(answering(line))
    with pytest.raises(AtspiUnavailable):
        reader.request("ping", timeout_s=5)
    reader.close()


def test_a_tree_answer_gives_the_xml_and_what_cut_it() -> None:
    answer = {"ok": True, "xml": GOOD_TREE, "truncated": True, "cut": ["nodes"], "nodes": 4}
    reader, _ = reader_printing(answering(json.dumps(answer)))
    tree = reader.accessibility_tree()
    assert tree.xml == GOOD_TREE and tree.truncated and tree.cut == ("nodes",) and tree.nodes == 4
    assert reader.tree() == GOOD_TREE
    reader.close()


BILLION_LAUGHS = (
    '<!DOCTYPE desktop-frame [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
    '<desktop-frame name="&b;"/>'
)


@pytest.mark.parametrize("xml", [BILLION_LAUGHS, 42, None, "<desktop-frame>"])
def test_a_tree_answer_that_is_not_the_readers_xml_is_refused(xml: object) -> None:
    reader, _ = reader_printing(answering(json.dumps({"ok": True, "xml": xml})))
    with pytest.raises(AtspiUnavailable):
        reader.tree()
    reader.close()


# -- the tree's XML, scanned and never parsed -------------------------------------------


@pytest.mark.parametrize(
    "xml",
    [
        GOOD_TREE,
        f"<desktop-frame {NS}/>",
        '<desktop-frame><text name="q">a\tb\nc</text><x:y a:b="&quot;&#x41;"/></desktop-frame>',
    ],
)
def test_the_xml_the_reader_writes_passes(xml: str) -> None:
    assert checked_tree(xml) == xml


@pytest.mark.parametrize(
    "xml",
    [
        BILLION_LAUGHS,
        '<?xml version="1.0"?><desktop-frame/>',
        "<desktop-frame><!-- a comment --></desktop-frame>",
        "<desktop-frame><![CDATA[<a>]]></desktop-frame>",
        "<desktop-frame>&ent;</desktop-frame>",
        "<desktop-frame>a & b</desktop-frame>",
        "<desktop-frame><a></desktop-frame>",
        "<desktop-frame><a></b></desktop-frame>",
        "<desktop-frame></desktop-frame><desktop-frame/>",
        "<desktop-frame/>trailing",
        " <desktop-frame/>",
        "<frame/>",
        "<desktop-frame>a > b</desktop-frame>",
        "<desktop-frame><a name='single'/></desktop-frame>",
        '<desktop-frame><a name="x"y="z"/></desktop-frame>',
        "<desktop-frame></desktop-frame name>",
        "<desktop-frame>\x00</desktop-frame>",
        "<desktop-frame>\x1b[31m</desktop-frame>",
        "",
        "just text",
    ],
)
def test_anything_else_is_refused(xml: str) -> None:
    with pytest.raises(AtspiUnavailable):
        checked_tree(xml)


def test_a_tree_over_its_length_is_refused() -> None:
    xml = "<desktop-frame>" + "x" * 100 + "</desktop-frame>"
    assert checked_tree(xml, limit=len(xml)) == xml
    with pytest.raises(AtspiUnavailable, match="over"):
        checked_tree(xml, limit=len(xml) - 1)
