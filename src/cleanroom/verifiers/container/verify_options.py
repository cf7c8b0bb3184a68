"""What runs in a rollout's agent phase (`AgentSpec`) and how it is verified
(`VerifyOptions`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cleanroom.verifiers.container.modes import DEFAULT_MODE, Mode


class VerifierSpares(Protocol):
    """Warm verifier's containers, one per kind (`run.spare_verifier.SpareVerifiers`)."""

    def take(self, image: str, kind: Any, tests_dirs: tuple[Path, ...]) -> Any:
        """The spare of ``kind`` on an image of ``image``'s content, its tests filled in;
        or None."""
        ...

    def replenish(self, image: str, kind: Any) -> None:
        """Start a spare of ``kind`` on ``image`` in the background."""
        ...


@dataclass(frozen=True)
class AgentSpec:
    """What runs in the agent phase: the task's solution, nothing, a command, a script,
    or a script that has the task's solution at ``/solution`` to run (an audit's probe
    that starts from the oracle's work)."""

    kind: str
    text: str = ""
    label: str = ""
    # Files handed to a script in `AGENT_FILES_DIR` before it runs (an attack's payload).
    files: tuple[tuple[str, bytes], ...] = ()

    @classmethod
    def solution(cls) -> AgentSpec:
        return cls("solution", label="solution")

    @classmethod
    def noop(cls) -> AgentSpec:
        return cls("noop", label="noop")

    @classmethod
    def command(cls, command: str) -> AgentSpec:
        return cls("command", command, label=f"agent: {command}")

    @classmethod
    def script(cls, text: str, label: str, files: tuple[tuple[str, bytes], ...] = ()) -> AgentSpec:
        return cls("script", text, label=label, files=files)

    @classmethod
    def script_with_solution(
        cls, text: str, label: str, files: tuple[tuple[str, bytes], ...] = ()
    ) -> AgentSpec:
        return cls("script_with_solution", text, label=label, files=files)

    @property
    def runs_solution(self) -> bool:
        """Whether the task's solution is put at ``/solution`` (and its environment given)."""
        return self.kind in ("solution", "script_with_solution")


@dataclass(frozen=True)
class VerifyOptions:
    """How to verify: the mode, and whether to keep containers and host folders."""

    mode: Mode = DEFAULT_MODE
    keep: bool = False
    # Base images rewritten before a task's image is built (``FROM`` lines, docker_image).
    image_map: tuple[tuple[str, str], ...] = ()
    # Where the agent's artifacts are collected on the host (Harbor's layout and
    # manifest.json); None: taken and listed in the outcome, not written.
    artifacts_dir: Path | None = None
    # ``shared`` only: read the reward with the container's own ``sh``, ``stat`` and
    # ``head`` as uid 0, as some harnesses do. Never a way to score: the red team's
    # demonstration of a trojaned reader (``trojan-head``).
    in_container_reader: bool = False
    # The most the verifier's setup commands and test.sh may run, when a harness's budget
    # leaves less than the task's own ``timeout_sec`` (which wins when it is shorter).
    test_limit_s: float | None = None
    # ``sealed`` only: list the files test.sh wrote in the verifier's container (beyond
    # the reward folder), each with the digest of its content without white space, in the
    # outcome's ``verifier_wrote`` details: the audit's scratch-link probe links to them.
    record_verifier_writes: bool = False
    # Where the verification starts when the agent is done (a container another harness
    # started): a warm verifier's container of the same kind is taken when one is up, and
    # the next is started after (`run.spare_verifier`). None: each starts its own.
    spares: VerifierSpares | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.in_container_reader and self.mode is not Mode.SHARED:
            raise ValueError("the in-container reader is for shared's demonstrations only")
        if self.test_limit_s is not None and not self.test_limit_s > 0:
            raise ValueError(f"test_limit_s must be above 0, not {self.test_limit_s!r}")

    def test_limit(self, task_limit_s: float) -> float:
        """The limit the verifier runs under: the task's, or less where asked."""
        if self.test_limit_s is None:
            return task_limit_s
        return min(task_limit_s, self.test_limit_s)
