"""What of the agent's container a sealed verifier gets: which paths are its state, what
it planted in its own reward folder, and each state path taken out as a checked archive.
Whatever the agent left that cannot be taken is its fault, named; a runtime that does
not answer is the infrastructure's, raised."""

from __future__ import annotations

import os
import posixpath
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from cleanroom.core.outcomes import Reason
from cleanroom.core.paths import under_any
from cleanroom.verifiers.container.agent_state.state_archive import StateArchiveError
from cleanroom.verifiers.container.decision.tamper import Change, ChangeKind, bytes_under
from cleanroom.verifiers.container.decision.verdict import AgentFault
from cleanroom.verifiers.container.run.context import TESTS_DIR, RunContext
from cleanroom.verifiers.container.runtime import (
    RuntimeUnavailable,
    StateCopy,
    StateTooLarge,
    VerificationRuntime,
)

# New top-level folders carried as state; more is the agent's ``workspace_broken``.
MAX_CREATED_FOLDERS = 64
# Archives taken out of the agent's container at once.
EXPORT_THREADS = 4


def declared_state(ctx: RunContext) -> list[str]:
    """The state paths the task names (the work dir and ``[verifier] state``)."""
    declared = [ctx.workdir] if ctx.workdir and ctx.workdir != "/" else []
    return [*declared, *ctx.verifier.state]


def state_paths(ctx: RunContext, changes: list[Change], baseline: tuple[Change, ...]) -> list[str]:
    """The work dir, the declared state, and top-level folders the agent created,
    outermost first, none inside another.

    A top-level folder the pristine image does not have (``/output``) is state by
    default: no tool of the verifier's searches a folder that did not exist, so only a
    test that names it looks there.
    """
    if ctx.separate_environment is not None:
        return []  # Harbor carries the artifacts alone to a separate verifier
    declared = declared_state(ctx)
    before = set(baseline)
    created = {c.path for c in changes if c.kind is ChangeKind.ADDED and c not in before}
    harness_made = {TESTS_DIR, "/solution", "/logs"}
    declared += [
        path
        for path in created
        if path.count("/") == 1
        and path not in harness_made
        and any(other.startswith(path + "/") for other in created)
    ]
    kept: list[str] = []
    for path in sorted(set(declared), key=lambda p: (p.count("/"), p)):
        if not under_any(path, kept):
            kept.append(path)
    return kept


def too_many_created(ctx: RunContext, paths: list[str]) -> AgentFault | None:
    """The agent's fault when it created more new top-level folders than are carried."""
    declared = set(declared_state(ctx))
    created = sum(1 for p in paths if p not in declared)
    if created <= MAX_CREATED_FOLDERS:
        return None
    return AgentFault(
        Reason.WORKSPACE_BROKEN,
        f"the agent created {created} new top-level folders; at most "
        f"{MAX_CREATED_FOLDERS} are carried to the verifier",
    )


def planted(ctx: RunContext, folder: Path | None) -> list[str]:
    """What the agent left in (or did to) its reward folder, seen from the host."""
    if folder is None:
        return []
    found: list[str] = []
    mode = stat.S_IMODE(os.lstat(folder).st_mode)
    # Only the harness that made the folder knows the mode it was left in.
    if ctx.owns_agent_container and mode != 0o777:
        found.append(f"{ctx.verifier.reward_dir} (its mode changed to {mode:04o})")
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name)[:20]:
            found.append(posixpath.join(ctx.verifier.reward_dir, entry.name))
    return found


@dataclass
class ExportedState:
    """The state paths taken (each closes its archive), the agent's fault at the first
    path that is its fault, and the special files left out of the archives."""

    copies: list[StateCopy]
    fault: AgentFault | None = None
    dropped: list[str] = field(default_factory=list)

    def close(self) -> None:
        for copy in self.copies:
            copy.close()


def export_state(
    ctx: RunContext, rt: VerificationRuntime, ctr: str, paths: list[str], changes: list[Change]
) -> ExportedState:
    """The agent's state paths as checked archives, taken side by side; at the first
    path (in order) that is the agent's fault, the fault is recorded; every copy taken is
    returned, for the caller to close."""
    cap = ctx.verifier.state_cap_mb << 20
    for path in paths:
        # The diff knows the apparent sizes: a 100 GiB sparse file is refused here,
        # before a byte of it is archived (the archive is capped as well).
        written = bytes_under(changes, path)
        if written > cap:
            return ExportedState(
                [],
                AgentFault(
                    Reason.WORKSPACE_TOO_LARGE,
                    f"the agent wrote {written >> 20} MiB into {path}, over the "
                    f"{ctx.verifier.state_cap_mb} MiB cap on state to verify",
                ),
            )
    with ThreadPoolExecutor(min(EXPORT_THREADS, max(1, len(paths))), "state-export") as pool:
        taking = [pool.submit(rt.state.export, ctr, p, cap) for p in paths]
    exported = ExportedState([f.result() for f in taking if f.exception() is None])
    for path, taken in zip(paths, taking, strict=True):
        try:
            copy = taken.result()
        except StateTooLarge as exc:
            exported.fault = AgentFault(Reason.WORKSPACE_TOO_LARGE, str(exc))
            break
        except StateArchiveError as exc:
            # The archive arrived whole (a broken transfer is RuntimeUnavailable), so
            # what cannot be read in it is what the agent put there.
            exported.fault = AgentFault(Reason.WORKSPACE_BROKEN, f"{path!r}: {exc}")
            break
        except RuntimeUnavailable as exc:
            if exc.status is None:  # the daemon did not answer: the infrastructure's
                exported.close()
                raise
            # The daemon answered, and refused what the agent left at the path.
            exported.fault = AgentFault(Reason.WORKSPACE_BROKEN, f"{path!r}: {exc}")
            break
        except UnicodeError as exc:  # a name of the agent's the API cannot carry
            exported.fault = AgentFault(Reason.WORKSPACE_BROKEN, f"{path!r}: {exc}")
            break
        except BaseException:
            exported.close()
            raise
        exported.dropped.extend(copy.dropped)
        if copy.too_long:
            exported.fault = AgentFault(
                Reason.WORKSPACE_BROKEN,
                f"{path} holds a path within a file name of PATH_MAX: {copy.too_long}",
            )
            break
        if path == ctx.workdir and copy.kind != "directory":
            exported.fault = AgentFault(
                Reason.WORKSPACE_BROKEN,
                f"the work dir {path} is {kind_phrase(copy.kind)} after the agent phase, "
                "not a folder",
            )
            break
    return exported


def kind_phrase(kind: str) -> str:
    return {"missing": "missing", "other": "a special file"}.get(kind, f"a {kind}")
