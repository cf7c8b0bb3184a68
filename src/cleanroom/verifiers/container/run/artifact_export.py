"""Taking the agent's artifacts out of its container (`artifacts` decides what and by
which rules): started beside the state's export, listed in the outcome, written to the
host when asked, and carried to a sealed or separate verifier."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from cleanroom.core.outcomes import Reason
from cleanroom.core.paths import under_any
from cleanroom.verifiers.container.agent_state import artifacts
from cleanroom.verifiers.container.agent_state.state_archive import StateArchiveError
from cleanroom.verifiers.container.decision.verdict import AgentFault
from cleanroom.verifiers.container.run.context import RunContext
from cleanroom.verifiers.container.runtime import StateCopy, StateTooLarge, VerificationRuntime


@dataclass
class TakenArtifacts:
    """The artifact entries, as taken (each closes its archive), the agent's fault when
    one carried to the verifier could not be, and what the outcome shows of them."""

    items: list[artifacts.Collected]
    fault: AgentFault | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        for item in self.items:
            item.close()


def offered_sources(ctx: RunContext) -> list[str]:
    """The artifact paths that are taken (those not skipped by `artifacts.plan`)."""
    planned = artifacts.plan(ctx.task.config.artifact_entries)
    return [i.entry.source for i in planned if i.status != "skipped"]


def prefetch(ctx: RunContext, rt: VerificationRuntime, ctr: str) -> list[Future[StateCopy] | None]:
    """Start taking every artifact entry's archive out of ``ctr``, in the order of
    `artifacts.plan` (None for a skipped entry), for `take` to use."""
    cap = ctx.verifier.state_cap_mb << 20
    planned = artifacts.plan(ctx.task.config.artifact_entries)
    if not any(item.status != "skipped" for item in planned):
        return []
    pool = ThreadPoolExecutor(len(planned), "artifact-export")
    try:
        return [
            None
            if item.status == "skipped"
            else pool.submit(
                rt.state.export, ctr, item.entry.source, cap, artifacts.rules(item.entry)
            )
            for item in planned
        ]
    finally:
        pool.shutdown(wait=False)


def take(
    ctx: RunContext,
    rt: VerificationRuntime,
    ctr: str,
    *,
    carried: bool,
    prefetched: list[Future[StateCopy] | None] | None = None,
) -> TakenArtifacts:
    """Take the agent's artifacts out of ``ctr`` (through the runtime, by the rules of
    `artifacts`; from ``prefetched``, `prefetch`'s, where given), list them and write
    them to the host when asked. Where they are ``carried`` to the verifier, one over
    the state cap is the agent's ``workspace_too_large`` as state is; elsewhere it is
    only not collected."""
    cap = ctx.verifier.state_cap_mb << 20
    taken = TakenArtifacts(artifacts.plan(ctx.task.config.artifact_entries))
    try:
        for i, item in enumerate(taken.items):
            if item.status == "skipped":
                continue
            try:
                started = None
                if prefetched:  # consumed here: closing it is now the item's job
                    started, prefetched[i] = prefetched[i], None
                if started is not None:
                    copy = started.result()
                else:
                    copy = rt.state.export(ctr, item.entry.source, cap, artifacts.rules(item.entry))
            except (StateTooLarge, StateArchiveError) as exc:
                item.status, item.note = "failed", str(exc)
                if carried:
                    reason = (
                        Reason.WORKSPACE_TOO_LARGE
                        if isinstance(exc, StateTooLarge)
                        else Reason.WORKSPACE_BROKEN
                    )
                    taken.fault = AgentFault(reason, f"artifact {exc}")
                    break
                continue
            item.kind, item.archive, item.dropped = copy.kind, copy.archive, copy.dropped
            item.tree = copy.tree
            item.status = artifacts.status_of(copy.kind, copy.archive)
            if copy.too_long:
                item.status, item.note = "failed", f"a path near PATH_MAX: {copy.too_long}"
        if ctx.options.artifacts_dir is not None:
            artifacts.write_to_host(ctx.options.artifacts_dir, taken.items)
            taken.details["artifacts_dir"] = str(ctx.options.artifacts_dir)
    except BaseException:
        taken.close()
        raise
    taken.details["artifacts"] = [item.describe() for item in taken.items]
    return taken


def carried_copies(taken: TakenArtifacts, state_paths: list[str]) -> list[StateCopy]:
    """The artifacts the verifier gets at their source paths, ahead of the state
    (installed after them, the state wins where the two meet). One inside a state path
    is there already, as state."""
    return [
        StateCopy(item.entry.source, item.kind, item.archive, tree=item.tree)
        for item in taken.items
        if item.carried and not under_any(item.entry.source, state_paths)
    ]


def close_unused(prefetched: list[Future[StateCopy] | None]) -> None:
    """Close the archives of prefetched artifacts nothing consumed (waiting for them)."""
    for started in prefetched:
        if started is not None and started.exception() is None:
            started.result().close()
