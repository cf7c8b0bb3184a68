"""The agent's configuration in its state, judged before a sealed verifier's tests run.

Two steps, around the clearing of the verifier's state paths: `pristine_home_files`
reads the image's own start-up and rc files in the home folders the state replaces
(once cleared, the image's version is gone), and `found_in` reads the state's archives
for what a tool of the verifier's would obey (`agent_state.tool_config`). Both paths of a
sealed verification, Docker's and Harbor's, come through here with the same archives.
"""

from __future__ import annotations

from collections.abc import Sequence

from cleanroom.core.observed_file import FileKind
from cleanroom.core.paths import under_any
from cleanroom.verifiers.container.agent_state import tool_config
from cleanroom.verifiers.container.decision.config_findings import ToolConfig
from cleanroom.verifiers.container.run.context import RunContext
from cleanroom.verifiers.container.runtime import (
    RuntimeUnavailable,
    StateCopy,
    VerificationRuntime,
)


def homes(ctx: RunContext) -> list[str]:
    """The home folders of the verifier's user (see `tool_config.verifier_homes`)."""
    return tool_config.verifier_homes(ctx.verifier.user, ctx.envs.verifier.get("HOME"))


def pristine_home_files(
    ctx: RunContext, rt: VerificationRuntime, vctr: str, state: Sequence[str]
) -> dict[str, bytes]:
    """The image's own start-up and rc files in the homes that lie in ``state``, read
    from the verifier's container before its state paths are cleared. A file the
    runtime refuses to read counts as absent: the agent's copy of it is then flagged."""
    in_state = [h for h in homes(ctx) if under_any(h, state)]
    found: dict[str, bytes] = {}
    for path in tool_config.home_files(in_state):
        try:
            seen = rt.files.read(vctr, path, tool_config.MAX_CONFIG_BYTES)
        except RuntimeUnavailable as exc:
            if exc.status is None:  # the runtime did not answer
                raise
            continue
        if seen.kind is FileKind.REGULAR:
            found[path] = seen.data
    return found


def found_in(
    ctx: RunContext, installed: Sequence[StateCopy], pristine: dict[str, bytes]
) -> tuple[ToolConfig, ...]:
    """What a tool of the verifier's would obey in the ``installed`` copies (none read
    again when their scans show no repository and no home folder)."""
    users = homes(ctx)
    if not tool_config.worth_reading([(c.path, c.tree) for c in installed], users):
        return ()
    archives = [(c.path, c.archive) for c in installed if c.archive is not None]
    named = ctx.verifier.state
    return tuple(tool_config.find_in_archives(archives, users, pristine, named))
