"""Focused text through AT-SPI, via a reader helper run by the system Python.

The distribution's AT-SPI bindings import only under /usr/bin/python3, so each
environment gets one long-lived reader process (``atspi_reader.py``) started as its user
in its session, and this module talks JSON lines to it.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleanroom.environments.errors import PoolError
from cleanroom.environments.session.login import Session

SYSTEM_PYTHON = "/usr/bin/python3"
READER_SOURCE = Path(__file__).with_name("atspi_reader.py")
_TIMEOUT_S = 5.0


class AtspiUnavailable(PoolError):
    """The accessibility tree could not be read (reader dead, bus gone, timeout)."""


@dataclass(frozen=True)
class FocusedText:
    """The focused accessible object and its text; for a document, the whole text too."""

    app: str | None
    role: str | None
    name: str | None
    text: str | None
    document_text: str | None

    @property
    def content(self) -> str | None:
        """What a reader of the focused thing sees: the document if there is one."""
        return self.document_text if self.document_text is not None else self.text

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "app": self.app,
            "role": self.role,
            "name": self.name,
            "text": self.text,
            "document_text": self.document_text,
        }


class AtspiReader:
    """One reader process; requests are serialised; a dead reader is restarted once."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if not os.path.exists(SYSTEM_PYTHON):
            raise AtspiUnavailable(f"{SYSTEM_PYTHON} is missing; install python3-pyatspi")
        source = READER_SOURCE.read_text()
        return self._session.spawn(
            [SYSTEM_PYTHON, "-c", source],
            env={**self._session.environ(), "PYTHONDONTWRITEBYTECODE": "1"},
            cwd="/",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def request(self, op: str, timeout_s: float = _TIMEOUT_S) -> dict[str, Any]:
        """Send one request and return the answer; raise `AtspiUnavailable` on failure."""
        with self._lock:
            for attempt in (1, 2):
                if self._proc is None or self._proc.poll() is not None:
                    self._proc = self._start()
                try:
                    return self._exchange(self._proc, op, timeout_s)
                except (OSError, ValueError, AtspiUnavailable) as exc:
                    self._kill()
                    if attempt == 2:
                        raise AtspiUnavailable(f"AT-SPI {op}: {exc}") from exc
            raise AssertionError("unreachable")

    def _exchange(self, proc: subprocess.Popen[str], op: str, timeout_s: float) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"op": op}) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
        if not ready:
            raise AtspiUnavailable(f"no answer within {timeout_s:g} s")
        line = proc.stdout.readline()
        if not line:
            raise AtspiUnavailable("the reader exited")
        answer: dict[str, Any] = json.loads(line)
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
