"""How a command's output is collected when the daemon's word and its stream disagree.

The daemon can report a command as exited while the command's output is still on its way
(seen on a loaded machine: a reward read back as empty). A scripted stand-in for the
Docker API plays that order of events; the real daemon is exercised by the integration
tests.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from cleanroom.core.observed_file import FileKind
from cleanroom.docker_layer import Docker
from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.runtime.docker import DockerRuntime


class _LateStreamApi:
    """Says every command has exited at once; with ``late``, delivers its output only
    after it has said so (the order seen on a loaded machine)."""

    def __init__(self, replies: list[tuple[bytes, bytes]], late: bool = False) -> None:
        self.replies = replies
        self.late = late
        self.exit_said = threading.Event()
        self.calls = 0

    def exec_create(self, container: str, argv: list[str], **_: Any) -> dict[str, str]:
        return {"Id": f"exec-{self.calls}"}

    def exec_start(self, exec_id: str, **_: Any) -> Iterator[tuple[bytes | None, bytes | None]]:
        out, err = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1

        def late() -> Iterator[tuple[bytes | None, bytes | None]]:
            if self.late:
                assert self.exit_said.wait(10), "the command's exit was never asked for"
            yield (None, err)
            yield (out, None)

        return late()

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        self.exit_said.set()
        return {"Running": False, "ExitCode": 0}


class _Client:
    def __init__(self, api: _LateStreamApi) -> None:
        self.api = api


def _runtime(api: _LateStreamApi) -> DockerRuntime:
    return DockerRuntime(Docker(_Client(api), api, RuntimeUnavailable))


def test_output_that_arrives_after_the_exit_is_still_collected() -> None:
    api = _LateStreamApi([(b"0.7500\n", b"7\n")], late=True)
    result = _runtime(api).containers.exec("ctr", ["true"])
    assert result.exit_code == 0
    assert result.stdout == b"0.7500\n"


def test_a_reward_read_back_short_is_read_again() -> None:
    api = _LateStreamApi([(b"", b"7\n"), (b"0.7500\n", b"7\n")])
    observed = _runtime(api).files.read_with_programs("ctr", "/logs/verifier/reward.txt")
    assert (observed.kind, observed.data, observed.size) == (FileKind.REGULAR, b"0.7500\n", 7)
    assert api.calls == 2


def test_a_reward_that_stays_short_is_the_daemon_failing_not_an_empty_reward() -> None:
    api = _LateStreamApi([(b"", b"7\n")])
    with pytest.raises(RuntimeUnavailable, match="0 bytes came back of 7"):
        _runtime(api).files.read_with_programs("ctr", "/logs/verifier/reward.txt")


def test_an_empty_reward_file_is_read_as_empty() -> None:
    api = _LateStreamApi([(b"", b"0\n")])
    observed = _runtime(api).files.read_with_programs("ctr", "/logs/verifier/reward.txt")
    assert (observed.kind, observed.data, observed.size) == (FileKind.REGULAR, b"", 0)
