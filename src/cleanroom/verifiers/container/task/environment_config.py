"""``[environment]`` and ``[[artifacts]]``: the image, network, limits, environment,
readiness check and what the verifier collects."""

from __future__ import annotations

import posixpath
import re
from typing import Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from cleanroom.core.paths import under
from cleanroom.verifiers.container.task.section_rules import (
    VERIFIER_PLACES,
    NetworkMode,
    Section,
    absolute_path,
    not_supported,
    refuse_allowlist,
)

# Harbor's folder for what the agent leaves the verifier: always an artifact.
ARTIFACTS_DIR = "/logs/artifacts"
MANIFEST_NAME = "manifest.json"  # Harbor's record of a collection, beside the artifacts
_MEMORY_RE = re.compile(r"\A(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\Z", re.IGNORECASE)
_MEMORY_UNITS = {"": 1 / (1 << 20), "k": 1 / 1024, "m": 1, "g": 1024, "t": 1 << 20}


class HealthcheckConfig(Section):
    """``[environment.healthcheck]``: Docker HEALTHCHECK's options, as Harbor reads them.

    The command runs (``bash -c``, as in Harbor) until it exits 0; during the start
    period failures do not count and attempts are ``start_interval_sec`` apart, after it
    they are ``interval_sec`` apart and ``retries`` consecutive failures give up.
    """

    command: str
    interval_sec: float = Field(default=5.0, ge=0)
    timeout_sec: float = Field(default=30.0, gt=0)
    start_period_sec: float = Field(default=0.0, ge=0)
    start_interval_sec: float = Field(default=5.0, ge=0)
    retries: int = Field(default=3, ge=1)


class EnvironmentConfig(Section):
    """``[environment]``: the image, network, limits, environment and readiness check."""

    # cleanroom's own switch, kept for its tasks; Harbor's network_mode and its legacy
    # allow_internet take precedence (`agent_network`).
    network: bool | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None
    allow_internet: bool | None = None
    docker_image: str | None = None
    os: Literal["linux", "windows"] = "linux"
    memory_mb: int | None = Field(default=None, gt=0)
    memory: str | None = None
    cpus: float | None = Field(default=None, gt=0)
    pids_limit: int | None = Field(default=None, gt=0)
    storage_mb: Any = None
    storage: Any = None
    gpus: int | None = Field(default=None, ge=0)
    gpu_types: list[str] | None = None
    tpu: Any = None
    mcp_servers: list[Any] = Field(default_factory=list)
    skills_dir: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    healthcheck: HealthcheckConfig | None = None
    workdir: str | None = None
    build_timeout_sec: float = Field(default=600.0, gt=0)

    @field_validator("os", mode="before")
    @classmethod
    def _linux_only(cls, value: Any) -> Any:
        if isinstance(value, str) and value.lower() == "windows":
            raise not_supported("Windows containers (os = 'windows')")
        return value.lower() if isinstance(value, str) else value

    @field_validator("storage_mb", "storage")
    @classmethod
    def _a_disk_size(cls, value: Any) -> Any:
        # Kept as Harbor's docker environment keeps it: read, and enforced by neither (no
        # disk quota on the container's layer; the state the verifier reads is capped by
        # [verifier] state_cap_mb).
        if value is not None and not isinstance(value, int | str):
            raise ValueError(
                f"a disk size is a number of MB or a size such as '10G', not {value!r}"
            )
        return value

    @field_validator("gpus")
    @classmethod
    def _no_gpus(cls, value: int | None) -> int | None:
        if value:
            raise not_supported("GPUs (gpus > 0)")
        return value

    @field_validator("gpu_types")
    @classmethod
    def _no_gpu_types(cls, value: list[str] | None) -> list[str] | None:
        if value:
            raise not_supported("GPU types (gpu_types)")
        return value

    @field_validator("tpu")
    @classmethod
    def _no_tpu(cls, value: Any) -> Any:
        raise not_supported("TPUs ([environment.tpu])")

    @field_validator("mcp_servers")
    @classmethod
    def _mcp_servers_are_tables_with_names(cls, value: list[Any]) -> list[Any]:
        # Harbor's meaning: servers Harbor hands the agent's configuration. The agent's
        # business, as its skills are; no verifier talks to them.
        for server in value:
            if not isinstance(server, dict) or not isinstance(server.get("name"), str):
                raise ValueError(f"an MCP server is a table with a name: {server!r}")
        return value

    @field_validator("skills_dir")
    @classmethod
    def _skills_dir_is_a_folder_of_the_environment(cls, value: Any) -> str | None:
        # Harbor's meaning: a folder inside the environment whose contents the agent
        # copies into its own configuration. The agent's business; no verifier reads it.
        if value is None:
            return None
        if not isinstance(value, str) or not value.startswith("/"):
            raise ValueError(f"skills_dir must be an absolute path in the environment: {value!r}")
        return value

    @field_validator("memory")
    @classmethod
    def _memory_has_a_unit_we_read(cls, value: str | None) -> str | None:
        if value is not None and not _MEMORY_RE.match(value.strip()):
            raise ValueError(f"memory must look like 512M or 2G, got {value!r}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> EnvironmentConfig:
        refuse_allowlist(self.network_mode, self.allowed_hosts)
        both = self.memory is not None and self.memory_mb is not None
        if both and self._memory_from_text() != self.memory_mb:
            raise ValueError(f"memory = {self.memory!r} and memory_mb = {self.memory_mb} disagree")
        return self

    @property
    def network_public(self) -> bool:
        """The environment's network: ``network_mode``, else ``allow_internet``, else
        cleanroom's ``network``; public when the task says nothing, as in Harbor."""
        if self.network_mode is not None:
            return self.network_mode == "public"
        if self.allow_internet is not None:
            return self.allow_internet
        return True if self.network is None else self.network

    @property
    def memory_limit_mb(self) -> int | None:
        """The memory limit in MiB from ``memory_mb`` or ``memory``, or None for none."""
        if self.memory_mb is not None:
            return self.memory_mb
        return self._memory_from_text()

    def _memory_from_text(self) -> int | None:
        if self.memory is None:
            return None
        m = _MEMORY_RE.match(self.memory.strip())
        assert m is not None  # checked by the validator
        return max(1, int(float(m[1]) * _MEMORY_UNITS[m[2].lower()]))


class ArtifactEntry(Section):
    """One entry of ``artifacts``: a path the agent leaves, carried to the verifier at
    that same path and collected on the host (under ``destination`` when given)."""

    source: str
    destination: str | None = None
    # Harbor's ``tar --exclude`` patterns: what matches is neither collected nor carried.
    exclude: list[str] = Field(default_factory=list)
    service: str | None = None

    @field_validator("source")
    @classmethod
    def _source_is_the_agents(cls, value: str) -> str:
        path = absolute_path(value, "artifact source")
        if path == "/" or any(under(path, t) or under(t, path) for t in VERIFIER_PLACES[:1]):
            raise ValueError(
                f"artifact source {path!r} would hand the verifier's /tests to the agent"
            )
        if under(path, "/logs") and not under(path, ARTIFACTS_DIR):
            # The rest of /logs is the harness's (the verifier's reward, the agent's logs).
            raise ValueError(
                f"artifact source {path!r}: under /logs, only {ARTIFACTS_DIR} is the agent's"
            )
        return path

    @field_validator("destination")
    @classmethod
    def _destination_stays_in_the_artifacts_folder(cls, value: str | None) -> str | None:
        if not value:
            return None
        parts = value.split("/")
        if "\\" in value or value.startswith("/") or ".." in parts:
            raise ValueError(
                f"artifact destination must be a relative path without '..', got {value!r}"
            )
        if value.rstrip("/") == MANIFEST_NAME:
            raise ValueError(f"artifact destination {MANIFEST_NAME!r} is the collection's record")
        return posixpath.normpath(value)

    @field_validator("service")
    @classmethod
    def _main_service_only(cls, value: str | None) -> str | None:
        if value not in (None, "main"):
            raise not_supported(f"artifacts of a compose service (service = {value!r})")
        return None

    @property
    def host_path(self) -> str:
        """Where it is collected, relative to the artifacts folder (Harbor's layout)."""
        return self.destination or self.source.lstrip("/")
