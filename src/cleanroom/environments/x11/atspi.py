"""Focused text and the accessibility tree through AT-SPI, via a reader helper run by
the system Python.

The distribution's AT-SPI bindings import only under /usr/bin/python3, so each
environment gets one long-lived reader process (``atspi_reader.py``) started as its user
in its session, and this module talks JSON lines to it.

The reader runs as the environment's user, whose programs are the agent's: what it
answers is read as untrusted. One answer is read within a deadline and up to
`MAX_ANSWER_BYTES`, and a tree must look like the XML the reader writes.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from cleanroom.environments.errors import PoolError
from cleanroom.environments.interface import AccessibilityTree, FocusedText
from cleanroom.environments.session.login import Session

SYSTEM_PYTHON = "/usr/bin/python3"
READER_SOURCE = Path(__file__).with_name("atspi_reader.py")
_TIMEOUT_S = 5.0
# The reader stops walking a tree after 15 s (its own bound); this leaves time for the
# object it is reading when that bound passes, and for the answer.
TREE_TIMEOUT_S = 25.0
# The longest answer read from a reader. A tree is at most about 8 MB of XML, which JSON
# escaping can double; anything longer ends the reader instead of filling memory.
MAX_ANSWER_BYTES = 32 * 1024 * 1024
# The longest tree accepted, in characters (the reader stops near 6 MB).
MAX_TREE_CHARS = 8_000_000
_READ_CHUNK = 1024 * 1024


class AtspiUnavailable(PoolError):
    """The accessibility tree could not be read (reader dead, bus gone, timeout)."""


def send_request(fd: int, data: bytes, deadline: float) -> None:
    """Write ``data`` to ``fd`` by ``deadline``, else `AtspiUnavailable` (a reader that
    stops reading its requests must not hold the caller)."""
    while data:
        left = deadline - time.monotonic()
        ready = select.select([], [fd], [], left)[1] if left > 0 else []
        if not ready:
            raise AtspiUnavailable("the reader takes no request")
        data = data[os.write(fd, data) :]


def read_answer(fd: int, deadline: float, limit: int = MAX_ANSWER_BYTES) -> bytes:
    """One newline-ended answer from ``fd``, without its newline.

    It must be whole by ``deadline`` (a `time.monotonic` time), at most ``limit`` bytes,
    and alone (nothing after its newline): else `AtspiUnavailable`. Bytes are read
    straight from the descriptor, never more than ``limit`` + 1 held."""
    buf = bytearray()
    while True:
        left = deadline - time.monotonic()
        ready = select.select([fd], [], [], left)[0] if left > 0 else []
        if not ready:
            raise AtspiUnavailable(f"no whole answer in time ({len(buf)} bytes came)")
        chunk = os.read(fd, min(_READ_CHUNK, limit + 1 - len(buf)))
        if not chunk:
            raise AtspiUnavailable("the reader exited")
        end = chunk.find(b"\n")
        if end >= 0 and end != len(chunk) - 1:
            raise AtspiUnavailable("the reader sent more than one answer")
        buf += chunk[:end] if end >= 0 else chunk
        if len(buf) > limit:
            raise AtspiUnavailable(f"an answer over {limit} bytes")
        if end >= 0:
            return bytes(buf)


# The markup the reader writes: start tags with double-quoted attributes, end tags, empty
# elements; nothing else may open with "<" (no declarations, CDATA, comments or processing
# instructions, so nothing can declare an entity), and "&" starts only a predefined entity
# or a character reference.
_TAG = re.compile(
    r'<(/?)([A-Za-z_][A-Za-z0-9_.:-]*)((?:\s+[A-Za-z_][A-Za-z0-9_.:-]*="[^"<>]*")*)\s*(/?)>'
)
_BAD_AMPERSAND = re.compile(r"&(?!(?:amp|lt|gt|quot|apos|#[0-9]{1,7}|#x[0-9A-Fa-f]{1,6});)")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
TREE_ROOT = "desktop-frame"


def checked_tree(xml: object, limit: int = MAX_TREE_CHARS) -> str:
    """``xml`` if it is a tree as the reader writes it, else `AtspiUnavailable`.

    A string of at most ``limit`` characters, only characters XML allows, one
    <desktop-frame> root, tags that nest and close, and none of the markup above. It is
    scanned, never parsed, so nothing in it is expanded."""
    if not isinstance(xml, str):
        raise AtspiUnavailable("the tree is not a string")
    if len(xml) > limit:
        raise AtspiUnavailable(f"the tree is over {limit} characters")
    if _NOT_XML.search(xml) or _BAD_AMPERSAND.search(xml):
        raise AtspiUnavailable("the tree is not well-formed XML")
    stack: list[str] = []
    pos = 0
    for m in _TAG.finditer(xml):
        between_ok = xml.find("<", pos, m.start()) < 0 and xml.find(">", pos, m.start()) < 0
        closing, name, attributes, empty = m.group(1), m.group(2), m.group(3), m.group(4)
        if not between_ok or (pos == 0 and (m.start() != 0 or name != TREE_ROOT)):
            raise AtspiUnavailable("the tree is not well-formed XML")
        if closing:
            if attributes or empty or not stack or stack.pop() != name:
                raise AtspiUnavailable("the tree is not well-formed XML")
        elif not empty:
            stack.append(name)
        pos = m.end()
        if not stack:
            break
    if pos == 0 or stack or pos != len(xml):
        raise AtspiUnavailable("the tree is not well-formed XML")
    return xml


class AtspiReader:
    """One reader process; requests are serialised; a dead reader is restarted once."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if not os.path.exists(SYSTEM_PYTHON):
            raise AtspiUnavailable(f"{SYSTEM_PYTHON} is missing; install python3-pyatspi")
        source = READER_SOURCE.read_text()
        return self._session.spawn(
            [SYSTEM_PYTHON, "-c", source],
            env={**self._session.environ(), "PYTHONDONTWRITEBYTECODE": "1"},
            cwd="/",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def request(self, op: str, timeout_s: float = _TIMEOUT_S) -> dict[str, Any]:
        """Send one request and return the answer; raise `AtspiUnavailable` on failure."""
        with self._lock:
            for attempt in (1, 2):
                if self._proc is None or self._proc.poll() is not None:
                    self._proc = self._start()
                try:
                    return self._exchange(self._proc, op, timeout_s)
                except (OSError, ValueError, RecursionError, AtspiUnavailable) as exc:
                    self._kill()
                    if attempt == 2:
                        raise AtspiUnavailable(f"AT-SPI {op}: {exc}") from exc
            raise AssertionError("unreachable")

    def _exchange(self, proc: subprocess.Popen[bytes], op: str, timeout_s: float) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        # Straight to and from the descriptors: the pipes' buffered files are never used.
        send_request(proc.stdin.fileno(), json.dumps({"op": op}).encode() + b"\n", deadline)
        line = read_answer(proc.stdout.fileno(), deadline, MAX_ANSWER_BYTES)
        answer = json.loads(line.decode("utf-8"))
        if not isinstance(answer, dict):
            raise AtspiUnavailable("the answer is not a JSON object")
        if not answer.get("ok"):
            raise AtspiUnavailable(str(answer.get("error", "unknown error")))
        return answer

    def focused(self) -> FocusedText:
        """The focused object's text (and its document's text when it is a paragraph)."""
        a = self.request("focused")
        return FocusedText(a["app"], a["role"], a["name"], a["text"], a["document_text"])

    def has_paragraph(self) -> bool:
        """Whether a showing paragraph is on the bus (a cheap readiness probe)."""
        return bool(self.request("has_paragraph")["found"])

    def texts(self) -> list[dict[str, Any]]:
        """Every showing text-bearing object: app, role, name, text."""
        items: list[dict[str, Any]] = self.request("texts")["items"]
        return items

    def accessibility_tree(self) -> AccessibilityTree:
        """Everything on this environment's accessibility bus in OSWorld's XML format
        (what its ``DesktopEnv`` gives as ``obs["accessibility_tree"]``), with its bounds."""
        a = self.request("tree", TREE_TIMEOUT_S)
        xml = checked_tree(a.get("xml"))
        named = a.get("cut")
        cut = (
            tuple(c[:40] for c in named[:16] if isinstance(c, str))
            if isinstance(named, list)
            else ()
        )
        nodes = a.get("nodes")
        return AccessibilityTree(
            xml,
            truncated=a.get("truncated") is True or bool(cut),
            cut=cut,
            nodes=nodes if isinstance(nodes, int) else 0,
        )

    def tree(self) -> str:
        """The accessibility tree as OSWorld's XML string (see `accessibility_tree`)."""
        return self.accessibility_tree().xml

    def _kill(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """End the reader."""
        with self._lock:
            self._kill()
