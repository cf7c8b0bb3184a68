"""What every section of ``task.toml`` shares: the base model, the network modes, the
refusals of what cleanroom does not support, and the rule for a path it names."""

from __future__ import annotations

import posixpath
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
)

DEFAULT_REWARD_PATH = "/logs/verifier/reward.txt"
VERIFIER_PLACES = ("/tests", "/logs")  # the verifier's own places, never the agent's state


class Section(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


NetworkMode = Literal["no-network", "public", "allowlist"]


def user_name(value: Any) -> Any:
    """Harbor takes a user as a name or a uid; cleanroom passes it to Docker as text."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def not_supported(what: str) -> ValueError:
    return ValueError(f"not supported by cleanroom: {what}")


def refuse_allowlist(mode: str | None, hosts: list[str] | None) -> None:
    if mode == "allowlist" or hosts:
        raise not_supported(
            "network_mode 'allowlist' and allowed_hosts (an egress allowlist); "
            "use 'no-network' or 'public'"
        )


def shared_verifier_only(value: str | None) -> str | None:
    if value == "separate":
        raise not_supported("a separate verifier environment (environment_mode 'separate')")
    return value


def no_verifier_environment(value: Any) -> Any:
    raise not_supported("a separate verifier environment ([verifier.environment])")


def no_collect_hooks(value: Any) -> Any:
    raise not_supported("a step's collect hooks ([[steps.verifier.collect]])")


def absolute_path(value: str, what: str) -> str:
    if not value.startswith("/"):
        raise ValueError(f"{what} must be absolute, got {value!r}")
    if ".." in value.split("/"):
        raise ValueError(f"{what} must not contain '..', got {value!r}")
    return posixpath.normpath(value)
