"""``shared`` and ``cleared``: test.sh in the live agent container.

``shared`` is the naive baseline and does what such harnesses do: a work dir the agent
broke makes test.sh fail to start (invalid: the hole the other modes close). ``cleared``
looks through the runtime's files, never with a program of the container's (a ``test``
or ``rm`` the agent replaced could answer anything), and removes the reward files right
before test.sh.
"""

from __future__ import annotations

import posixpath
import time

from cleanroom.core.observed_file import FileKind, ObservedFile
from cleanroom.core.outcomes import Reason
from cleanroom.verifiers.container.decision.verdict import AgentFault, Evidence
from cleanroom.verifiers.container.run.commands import (
    read_in_place,
    read_results,
    run_setup,
    run_test,
)
from cleanroom.verifiers.container.run.context import (
    TESTS_DIR,
    RunContext,
    output_tail,
    timed,
)
from cleanroom.verifiers.container.run.recording import record_setup, record_test
from cleanroom.verifiers.container.runtime import VerificationRuntime


def verify_in_place(ctx: RunContext, rt: VerificationRuntime, ev: Evidence, ctr: str) -> None:
    """Run the verifier in the agent's container ``ctr`` and read its reward there."""
    vcfg = ctx.verifier
    if ctx.workdir and ctx.plan.clears_reward:
        there = rt.files.read(ctr, posixpath.join(ctx.workdir, "."), cap=0)
        if (there.kind, there.note) != (FileKind.OTHER, "directory"):
            ev.agent_fault = AgentFault(
                Reason.WORKSPACE_BROKEN,
                f"the work dir {ctx.workdir} is not a folder after the agent phase",
            )
            return
    for tests in ctx.tests_dirs:
        rt.containers.put_dir(ctr, tests, TESTS_DIR)
    deadline = time.monotonic() + vcfg.timeout_sec
    if not record_setup(ev, run_setup(ctx, rt, ctr, deadline, [])):
        return
    if ctx.plan.clears_reward:
        ev.agent_fault = _clear_reward(ctx, rt, ctr)
        if ev.agent_fault is not None:
            return
    if not record_test(ev, run_test(ctx, rt, ctr, deadline, [])):
        return
    with timed(ev, "read_s"):
        results = read_results(ctx, rt, ctr)
        if results:
            ev.details["results"] = results
        ev.json_file = read_in_place(ctx, rt, ctr, vcfg.reward_json_path)
        ev.text_file = _text_reward(ctx, rt, ev, ctr)


def _clear_reward(ctx: RunContext, rt: VerificationRuntime, ctr: str) -> AgentFault | None:
    """Remove the reward files as uid 0 right before test.sh (``cleared``); the agent's
    fault when they cannot be."""
    paths = ctx.verifier.reward_paths
    cleared = rt.containers.exec(ctr, ["rm", "-f", "--", *paths], user="0", workdir="/")
    if cleared.exit_code != 0:
        # The harness made the reward folder; only the agent can have made its reward
        # unremovable (a directory, an immutable file, a read-only mount).
        return AgentFault(
            Reason.TAMPER,
            f"the reward could not be cleared before test.sh: rm exited "
            f"{cleared.exit_code}: {output_tail(cleared.output, 500)}",
        )
    # The rm that ran is the container's: what it left is seen through the runtime's
    # files (an rm the agent replaced reports success and removes nothing).
    left = [p for p in paths if rt.files.read(ctr, p, cap=0).kind is not FileKind.MISSING]
    if left:
        return AgentFault(
            Reason.TAMPER,
            f"the reward could not be cleared before test.sh: {', '.join(left)} "
            f"still there after rm reported success",
        )
    return None


def _text_reward(ctx: RunContext, rt: VerificationRuntime, ev: Evidence, ctr: str) -> ObservedFile:
    if ev.json_file is not None and ev.json_file.kind is not FileKind.MISSING:
        return ObservedFile.missing(ctx.verifier.reward_path)  # JSON wins; text is not read
    return read_in_place(ctx, rt, ctr, ctx.verifier.reward_path)
