"""A loaded task folder: where its parts are (`Task`, `TaskStep`) and where a separate
verifier runs (`VerifierEnvironment`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cleanroom.verifiers.container.task.compose_model import ComposeProject
from cleanroom.verifiers.container.task.environment_config import EnvironmentConfig
from cleanroom.verifiers.container.task.errors import TaskWarning
from cleanroom.verifiers.container.task.task_config import StepConfig, TaskConfig


@dataclass(frozen=True)
class TaskStep:
    """One step of a multi-step task: its config and its folder ``steps/<name>/``.

    The step's tests are the task's ``tests/`` with the step's ``tests/`` copied over
    them (its ``test.sh`` wins); its solution is the step's ``solution/`` when it has
    one, else the task's, as Harbor's oracle finds them.
    """

    config: StepConfig
    root: Path
    task_root: Path

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def instruction(self) -> str:
        return (self.root / "instruction.md").read_text(encoding="utf-8")

    @property
    def tests_dirs(self) -> tuple[Path, ...]:
        """The folders copied to ``/tests`` for this step, in order, later ones on top."""
        return tuple(d for d in (self.task_root / "tests", self.root / "tests") if d.is_dir())

    @property
    def solution_dir(self) -> Path:
        own = self.root / "solution"
        return own if own.is_dir() else self.task_root / "solution"


@dataclass(frozen=True)
class Task:
    """A loaded task: where its parts are, its config, and what was kept but not understood."""

    root: Path
    config: TaskConfig
    warnings: tuple[TaskWarning, ...] = field(default=())
    # Harbor's ``[[steps]]`` in order; empty for a single-step task.
    steps: tuple[TaskStep, ...] = field(default=())
    # ``environment/docker-compose.yaml``: the services beside the agent's container.
    compose: ComposeProject | None = None

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def environment_dir(self) -> Path:
        return self.root / "environment"

    @property
    def tests_dir(self) -> Path:
        return self.root / "tests"

    @property
    def tests_dirs(self) -> tuple[Path, ...]:
        """The folders copied to ``/tests`` of a single-step task."""
        return (self.tests_dir,)

    @property
    def solution_dir(self) -> Path:
        return self.root / "solution"

    @property
    def dockerfile(self) -> Path | None:
        """``environment/Dockerfile``, or None when the task names a prebuilt image."""
        path = self.environment_dir / "Dockerfile"
        return path if path.is_file() else None

    @property
    def instruction(self) -> str:
        """The task's instruction; empty for a multi-step task, as in Harbor (each step
        has its own, `TaskStep.instruction`)."""
        if self.steps:
            return ""
        return (self.root / "instruction.md").read_text(encoding="utf-8")

    def verifier_environment(self) -> VerifierEnvironment | None:
        """Where a separate verifier runs, or None when test.sh runs where the agent
        acted. Harbor's order: ``[verifier.environment] docker_image``, else an image
        built from ``tests/`` (its Dockerfile), both holding ``/tests`` themselves; else
        the task's own environment, with the tests copied in. Resources, environment
        variables, work dir and readiness check come from ``[verifier.environment]``,
        else from ``[environment]``."""
        verifier = self.config.verifier
        if not verifier.separate:
            return None
        own = verifier.environment
        config = own if own is not None else self.config.environment
        if own is not None and own.docker_image:
            return VerifierEnvironment(config, None, own.docker_image, bundled_tests=True)
        if (self.tests_dir / "Dockerfile").is_file():
            return VerifierEnvironment(config, self.tests_dir, None, bundled_tests=True)
        if self.dockerfile is not None:
            return VerifierEnvironment(config, self.environment_dir, None, bundled_tests=False)
        return VerifierEnvironment(
            config, None, self.config.environment.docker_image, bundled_tests=False
        )


@dataclass(frozen=True)
class VerifierEnvironment:
    """A separate verifier's environment: its config, and its image, built from
    ``build_dir`` (a folder with a Dockerfile) or named by ``image``. With
    ``bundled_tests`` the image holds ``/tests`` and the task's tests are not copied in."""

    config: EnvironmentConfig
    build_dir: Path | None
    image: str | None
    bundled_tests: bool
