"""The typed records of a task's ``environment/docker-compose.yaml`` (`ComposeProject`,
`Service`), and the error that names what in it cannot be used (`ComposeError`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAIN = "main"
COMPOSE_FILE = "docker-compose.yaml"


class ComposeError(ValueError):
    """The compose file cannot be used as it is; says where and why."""

    def __init__(self, path: Path, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


@dataclass(frozen=True)
class Build:
    """``build``: a folder (relative to ``environment/``) and its Dockerfile."""

    context: Path
    dockerfile: str = "Dockerfile"
    args: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Healthcheck:
    """``healthcheck``: run by the Docker daemon in the service's container, as Compose
    asks it to; ``test`` None keeps the image's own ``HEALTHCHECK`` options."""

    test: tuple[str, ...] | None = None
    interval_s: float | None = None
    timeout_s: float | None = None
    retries: int | None = None
    start_period_s: float | None = None

    def docker(self) -> dict[str, Any]:
        """The Engine API's ``Healthcheck`` (durations in nanoseconds)."""
        out: dict[str, Any] = {}
        if self.test is not None:
            out["test"] = list(self.test)
        for key, seconds in (
            ("interval", self.interval_s),
            ("timeout", self.timeout_s),
            ("start_period", self.start_period_s),
        ):
            if seconds is not None:
                out[key] = int(seconds * 1e9)
        if self.retries is not None:
            out["retries"] = self.retries
        return out


@dataclass(frozen=True)
class Service:
    """One service beside ``main``, with the Compose keys cleanroom implements."""

    name: str
    image: str | None = None
    build: Build | None = None
    command: tuple[str, ...] | None = None
    entrypoint: tuple[str, ...] | None = None
    environment: tuple[tuple[str, str], ...] = ()
    user: str | None = None
    working_dir: str | None = None
    # Service name -> ``service_started`` or ``service_healthy``.
    depends_on: tuple[tuple[str, str], ...] = ()
    healthcheck: Healthcheck | None = None
    # Healthcheck disabled (``disable: true`` or ``test: ["NONE"]``): the image's too.
    healthcheck_disabled: bool = False
    restart: str = "no"
    init: bool = False
    tmpfs: tuple[str, ...] = ()
    hostname: str | None = None
    # A second name on the rollout's network (never the container's own: rollouts run
    # side by side), so what reaches the service by that name still does.
    container_name: str | None = None
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ComposeProject:
    """The task's services beside ``main``, in the order they start, and what the file
    says of ``main`` itself."""

    path: Path
    services: tuple[Service, ...] = ()
    main_depends_on: tuple[tuple[str, str], ...] = ()
    main_environment: tuple[tuple[str, str], ...] = ()
    names: frozenset[str] = field(default_factory=frozenset)
    # What was kept with a note: templates whose variable was unset (filled with an
    # empty text, as Compose does), ports that are not published.
    warnings: tuple[str, ...] = ()
