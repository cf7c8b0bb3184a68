"""What the agent left that a tool of the verifier's would obey as configuration: the
records `agent_state.tool_config` finds and the tamper report carries (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ConfigKind(StrEnum):
    """What a piece of found configuration is."""

    GIT_SETTING = "git setting"  # runs a program or leads git elsewhere
    GIT_HOOK = "git hook"
    GIT_REDIRECT = "git redirect"  # a .git file, commondir, config or hooks leading away
    UNREADABLE = "unreadable"  # git could not read it as left, or it is over the caps
    START_UP_FILE = "start-up file"  # a shell's
    RC_FILE = "rc file"  # a tool's


@dataclass(frozen=True, order=True)
class ToolConfig:
    """One piece of the agent's configuration a tool of the verifier's would obey: its
    installed path, its kind, the key, hook or tool it concerns, and why it counts."""

    path: str
    kind: ConfigKind
    key: str = ""
    why: str = ""

    def __str__(self) -> str:
        what = f" {self.key}" if self.key else ""
        return f"{self.path}:{what} ({self.kind.value}: {self.why})"
