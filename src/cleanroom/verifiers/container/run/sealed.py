"""``sealed`` (and a separate verifier in any mode): test.sh in a fresh container of the
pristine image, with the agent's state installed and its reward read on the host.

The agent's container is frozen, its changes classified (`tamper`) before anything of
the agent's is handled, its state paths and artifacts taken out, and installed in the
verifier's container, which was started from the pristine image while the agent acted
(or while its container was frozen and read). A link of the agent's that resolves into
the verifier's places is tampering; a reward written after test.sh ended, or by the
agent's code while the tests ran (the runner witness), is too; and so is configuration
in the state that a tool of the verifier's would obey (`state_config`), found before
anything is installed.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import time
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path

from cleanroom.core.observed_file import FileKind
from cleanroom.core.outcomes import Reason
from cleanroom.core.paths import under_any
from cleanroom.host_files import read_capped
from cleanroom.verifiers.container.agent_state import state_archive
from cleanroom.verifiers.container.decision.reward import REWARD_CAP_BYTES
from cleanroom.verifiers.container.decision.tamper import ChangeKind, TamperReport, classify
from cleanroom.verifiers.container.decision.verdict import AgentFault, Evidence
from cleanroom.verifiers.container.run import (
    artifact_export,
    freeze,
    link_freeze,
    name_files,
    state_config,
    state_export,
)
from cleanroom.verifiers.container.run.commands import (
    check_health,
    read_results,
    run_collect_hooks,
    run_setup,
    run_test,
)
from cleanroom.verifiers.container.run.context import (
    PYTHON_GUARD_DIR,
    TESTS_DIR,
    WITNESS_DIR,
    AgentContainer,
    Resources,
    RunContext,
    VerifierFolders,
    timed,
)
from cleanroom.verifiers.container.run.recording import record_collect, record_setup, record_test
from cleanroom.verifiers.container.run.spare_verifier import Spare, SpareKind
from cleanroom.verifiers.container.run.witness_folder import read_witness
from cleanroom.verifiers.container.runtime import (
    Limits,
    RuntimeUnavailable,
    StateCopy,
    VerificationRuntime,
    VerifierContainerSpec,
)
from cleanroom.verifiers.container.task import HealthcheckConfig


class Unhealthy(Exception):
    """The task's healthcheck failed in a container the harness started."""


@dataclass(frozen=True)
class StartingVerifier:
    """A verifier's container being started (its id, once it is), with its folders."""

    started: Future[str]
    folders: VerifierFolders


def start_verifier(
    ctx: RunContext, res: Resources, ev: Evidence, agent: AgentContainer | None, image: str
) -> StartingVerifier:
    """Start the verifier's container now, in the background: beside the agent's
    (``agent`` None: a verifier that talks to no process of the agent's) or while
    the agent acts. It is made from the pristine image and depends on nothing the agent
    does, so its start (the longest wait of a sealed verification) overlaps the agent's.
    Nothing of the agent's reaches it before `verify_sealed` installs the state: it has
    no network the agent's container is on, only the services' (where nothing of it
    listens) or, for a verifier that talks to the agent's processes, the agent's own
    namespace."""
    spare = _spare(ctx, res, ev, agent, image)
    if spare is not None:
        return spare
    folders = res.fresh_folders(ctx)
    started = res.in_background(lambda: _start(ctx, res, ev, agent, image, folders))
    return StartingVerifier(started, folders)


def _spare(
    ctx: RunContext, res: Resources, ev: Evidence, agent: AgentContainer | None, image: str
) -> StartingVerifier | None:
    """A warm verifier's container of this verification's kind, when the options keep
    spares and one is up (`spare_verifier`); the next is started once this run ends."""
    spares = ctx.options.spares
    vcfg = ctx.verifier
    if spares is None or ctx.options.keep or agent is None or vcfg.live_processes:
        return None
    if ctx.separate_environment is not None or res.services is not None:
        return None
    if _verifier_network(ctx):
        return None
    kind = SpareKind(
        ctx.limits,
        "/",
        (TESTS_DIR, vcfg.reward_dir, PYTHON_GUARD_DIR, WITNESS_DIR),
        (PYTHON_GUARD_DIR,),
        tuple(sorted(ctx.envs.task.items())),
    )
    res.after_teardown(lambda: spares.replenish(image, kind))
    with timed(ev, "start_s"):
        spare = spares.take(image, kind, ctx.tests_dirs)
    if not isinstance(spare, Spare):
        return None
    res.adopt(spare.container, spare.root)
    ev.details["verifier_container"] = "spare"
    started: Future[str] = Future()
    started.set_result(spare.container)
    healthcheck = ctx.task.config.environment.healthcheck
    if healthcheck is not None:
        started = res.in_background(lambda: _healthy(ctx, res, ev, spare.container, healthcheck))
    return StartingVerifier(started, spare.folders)


def _verifier_network(ctx: RunContext) -> bool:
    """Whether the verifier's container gets a network of its own: the run's
    ``network_mode`` when one is set, else the task's ``[verifier]`` setting."""
    mode = ctx.verifier.network_mode
    return mode == "public" if mode is not None else ctx.task.config.verifier_network


def _healthy(
    ctx: RunContext, res: Resources, ev: Evidence, vctr: str, healthcheck: HealthcheckConfig | None
) -> str:
    """``vctr`` once the task's readiness check (if any) holds in it, recorded; it runs
    before the agent's state is installed, so what it finds is never the agent's."""
    if healthcheck is not None:
        health = check_health(res.rt, vctr, healthcheck, ctx.workdir, "verifier")
        ev.details.setdefault("healthcheck", []).append(health.record)
        if health.failed:
            raise Unhealthy(f"in the verifier's container, {health.failed}")
    return vctr


def _start(
    ctx: RunContext,
    res: Resources,
    ev: Evidence,
    agent: AgentContainer | None,
    image: str,
    folders: VerifierFolders,
) -> str:
    """A fresh idle container of the pristine image, its folders bound in (in the
    agent's network namespace, for a ``live_processes`` verifier, with the harness's
    name files: `live_name_files`)."""
    vcfg = ctx.verifier
    if vcfg.live_processes and agent is None:
        raise ValueError("a live_processes verifier starts once the agent's container has")
    binds = {
        folders.reward: vcfg.reward_dir,
        folders.guard: PYTHON_GUARD_DIR,
        folders.witness: WITNESS_DIR,
    }
    read_only = [PYTHON_GUARD_DIR]
    if vcfg.live_processes and agent is not None:
        names = live_name_files(res, ev, agent)
        binds.update(names)
        read_only.extend(names.values())
    separate = ctx.separate_environment
    limits, environment = ctx.limits, ctx.envs.task
    if separate is not None:
        limits = Limits.of_environment(separate.config, False)
        environment = ctx.envs.separate
    if separate is None or not separate.bundled_tests:
        binds[folders.tests] = TESTS_DIR
    with timed(ev, "start_s"):
        vctr = res.rt.containers.start_verifier(
            VerifierContainerSpec(
                image,
                limits,
                "/",
                binds,
                join_network_of=agent.id if vcfg.live_processes and agent else None,
                read_only=tuple(read_only),
                network=_verifier_network(ctx),
                environment=environment,
                # A separate verifier is an environment of its own, as in Harbor: the
                # agent's services reach it only through artifacts.
                services_network=(
                    res.services.network if res.services and separate is None else None
                ),
            )
        )
    res.containers.append(vctr)
    # The task's readiness check holds for the verifier's environment too; it runs
    # before the agent's state is installed, so what it finds is never the agent's.
    config = separate.config if separate else ctx.task.config.environment
    return _healthy(ctx, res, ev, vctr, config.healthcheck)


def live_name_files(res: Resources, ev: Evidence, agent: AgentContainer) -> dict[Path, str]:
    """The harness's name files for a verifier in ``agent``'s network namespace, as
    binds: Docker would bind the agent's own copies, which the agent can edit (a line in
    its hosts file sends a name the tests ask for to a process of its own). Those taken
    before the agent acted, or, for a container another harness started, made afresh
    from its configuration by the runtime (and what the agent's differ from them is
    evidence, as the rollout's own run records it after the agent phase)."""
    made = agent.name_files
    if made is None:
        made = res.rt.containers.name_files(agent.id)
        ev.name_files_changed = name_files.changed(res.rt, agent.id, made)
    return name_files.host_copies(res.workspace(), made)


def verify_sealed(
    ctx: RunContext,
    res: Resources,
    ev: Evidence,
    agent: AgentContainer,
    image: str,
    starting: StartingVerifier | None,
) -> None:
    """Verify ``agent``'s state on ``image`` (the pristine image, or a separate
    verifier's), in the verifier's container ``starting`` (started now when None)."""
    rt = res.rt
    if starting is None:
        # The verifier's container depends on nothing the agent left, so it starts while
        # the agent's is frozen and read: the two waits on the daemon overlap.
        starting = start_verifier(ctx, res, ev, agent, image)
    exported = state_export.ExportedState([])
    taken = artifact_export.TakenArtifacts([])
    prefetched: list[Future[StateCopy] | None] = []
    try:
        with timed(ev, "freeze_s"):
            held = freeze.hold_still(ctx, rt, agent.id)
            ev.details.update(held.details())
            if held.fault is not None:
                ev.agent_fault = held.fault
                return
            # As in Harbor when main has no further use: the services' hooks run once
            # nothing the agent left can run beside them.
            record_collect(ev, *run_collect_hooks(ctx, rt, agent.id, res.services, in_main=False))
            diff = rt.state.changes(agent.id)
            paths = state_export.state_paths(ctx, diff.changes, agent.baseline)
            ev.details["state_paths"] = paths
            # The verifier's copy of the state paths is cleared while the agent's is read.
            clearing = res.in_background(lambda: _cleared(ctx, res, starting.started, paths))
            # Tamper is read from the diff before anything of the agent's is handled: no
            # name, size or kind it left can turn a caught forgery into an error.
            watched = agent.reward_dir is not None
            ev.tamper = classify(
                diff.changes,
                verifier_places=((TESTS_DIR,) if watched else (TESTS_DIR, ctx.verifier.reward_dir)),
                state_paths=[*paths, *artifact_export.offered_sources(ctx)],
                planted=state_export.planted(ctx, agent.reward_dir),
                baseline=list(agent.baseline),
            )
            if ev.tamper.tampered:
                return
            ev.agent_fault = state_export.too_many_created(ctx, paths)
            if ev.agent_fault is not None:
                return
            # The artifacts' archives are taken beside the state's: each is a wait on
            # the daemon.
            prefetched = artifact_export.prefetch(ctx, rt, agent.id)
            exported = state_export.export_state(ctx, rt, agent.id, paths, diff.changes)
            if exported.dropped:
                ev.details["state_dropped"] = exported.dropped[:]
            ev.agent_fault = exported.fault
            if ev.agent_fault is None:
                taken = artifact_export.take(ctx, rt, agent.id, carried=True, prefetched=prefetched)
                ev.details.update(taken.details)
                ev.agent_fault = taken.fault
        ev.details["diff"] = {"source": diff.source, "entries": len(diff.changes)}
        if diff.incomplete:
            ev.details["diff"]["incomplete"] = diff.incomplete
        if ctx.needs_live_agent:
            # Honest work lives in its processes, the verifier's or the next step's.
            freeze.thaw(ctx, rt, agent.id)
        # The agent's stopped container stays until teardown: removing it now would
        # compete with the install below for the disk (a 20 MB venv's install took 2.3 s
        # beside the removal and 0.4 s without it).
        # What the verifier gets as an artifact it sees, as it sees the state.
        agent_paths = [*paths, *(i.entry.source for i in taken.items if i.carried)]
        if ev.agent_fault is not None:
            return
        installed = artifact_export.carried_copies(taken, paths) + exported.copies
        ev.agent_fault = link_freeze.too_many_links(installed)
        if ev.agent_fault is not None:
            return
        try:
            vctr, ready, pristine = clearing.result()
            # Configuration of the agent's that a tool of the verifier's would obey (a
            # git filter or hook, a home's start-up file) is its tamper, found before
            # the tests run (`state_config`).
            with timed(ev, "config_s"):
                configured = state_config.found_in(ctx, installed, pristine)
            if configured:
                ev.tamper = replace(ev.tamper, config=configured)
                rt.containers.kill(vctr)
                return
            with timed(ev, "links_s"):
                judged = link_freeze.judge_and_freeze(rt, vctr, installed, _verifier_places(ctx))
            ev.details["links"] = judged.details()
            if judged.tamper:
                ev.tamper = replace(ev.tamper, links=tuple(judged.tamper))
                rt.containers.kill(vctr)
                return
            with timed(ev, "install_s"):
                rt.state.install(vctr, installed, cleared=sorted(ready))
        except RuntimeUnavailable as exc:
            if exc.status is None:  # the daemon did not answer
                raise
            why = f"the agent's state could not be installed: {exc}"
            ev.agent_fault = AgentFault(Reason.WORKSPACE_BROKEN, why[:800])
            return
        except UnicodeError as exc:  # a name of the agent's the API cannot carry
            why = f"the agent's state could not be installed: {exc!r}"
            ev.agent_fault = AgentFault(Reason.WORKSPACE_BROKEN, why[:800])
            return
        except state_archive.StateArchiveError as exc:
            why = f"the agent's state could not be installed: {exc}"
            ev.agent_fault = AgentFault(Reason.WORKSPACE_BROKEN, why[:800])
            return
    finally:
        exported.close()
        taken.close()
        artifact_export.close_unused(prefetched)
    _verify_on_pristine(ctx, res, ev, vctr, starting.folders, agent_paths)


def _cleared(
    ctx: RunContext, res: Resources, starting: Future[str], paths: list[str]
) -> tuple[str, set[str], dict[str, bytes]]:
    """The verifier's container, once started, with its state paths cleared, and the
    paths that installing needs not clear: the state paths, and every artifact's source
    that the pristine image does not have (as a rule, all of them); and the image's own
    start-up files in homes that are state, read before they are cleared."""
    vctr = starting.result()
    pristine = state_config.pristine_home_files(ctx, res.rt, vctr, paths)
    sources = artifact_export.offered_sources(ctx)
    sources = [p for p in sources if not under_any(p, paths)]
    absent = res.rt.state.clear(vctr, paths, probe=sources)
    return vctr, {*paths, *absent}, pristine


def _verifier_places(ctx: RunContext) -> tuple[str, ...]:
    """Where no link of the agent's may lead: the tests, the reward folder, cleanroom's
    mounts."""
    return (TESTS_DIR, ctx.verifier.reward_dir, PYTHON_GUARD_DIR, WITNESS_DIR)


def _verify_on_pristine(
    ctx: RunContext,
    res: Resources,
    ev: Evidence,
    vctr: str,
    folders: VerifierFolders,
    agent_paths: list[str],
) -> None:
    rt = res.rt
    recording = ctx.options.record_verifier_writes
    installed = _files_now(rt, vctr) if recording else set()
    deadline = time.monotonic() + ctx.verifier.timeout_sec
    setup = run_setup(ctx, rt, vctr, deadline, agent_paths)
    tests = run_test(ctx, rt, vctr, deadline, agent_paths) if record_setup(ev, setup) else None
    if tests is None or not record_test(ev, tests):
        rt.containers.kill(vctr)
        return
    ended_ns = tests.ended_ns
    with timed(ev, "read_s"):
        # Nothing the verifier started may write the reward, its results (or the
        # witness's records) while they are read.
        rt.containers.kill(vctr)
        if recording:
            ev.details["verifier_wrote"] = _written_by_tests(ctx, rt, vctr, installed)
        results = read_results(ctx, rt, vctr, host_reward_dir=folders.reward)
        if results:
            ev.details["results"] = results
        reward_dir = folders.reward
        json_path, text_path = ctx.verifier.reward_paths
        ev.json_file = read_capped(
            reward_dir, posixpath.basename(json_path), json_path, REWARD_CAP_BYTES
        )
        ev.text_file = read_capped(
            reward_dir, posixpath.basename(text_path), text_path, REWARD_CAP_BYTES
        )
        touched = written_after(reward_dir, ctx.verifier.reward_paths, ended_ns)
        if ctx.plan.freezes_agent:
            ev.witness = read_witness(folders.witness, agent_paths)
            touched += ev.witness.touched
        if touched:
            found = ev.tamper or TamperReport(protected=(), planted=())
            ev.tamper = replace(found, touched=touched)


_SCRATCH_SHOWN = 20
_SCRATCH_CAP_BYTES = 1 << 20
_NOT_SCRATCH = ("/logs", TESTS_DIR, "/run/cleanroom", "/proc", "/sys", "/dev")


def _files_now(rt: VerificationRuntime, vctr: str) -> set[str]:
    """The paths the verifier's container has added or changed against its image."""
    return {c.path for c in rt.state.changes(vctr).changes if c.kind is not ChangeKind.DELETED}


def _written_by_tests(
    ctx: RunContext, rt: VerificationRuntime, vctr: str, before: set[str]
) -> list[dict[str, str]]:
    """The regular files test.sh (and the setup) wrote beyond the reward folder and the
    verifier's own places, with the SHA-256 of each one's content without white space
    (the first `_SCRATCH_SHOWN`, each at most `_SCRATCH_CAP_BYTES`)."""
    found: list[dict[str, str]] = []
    for path in sorted(_files_now(rt, vctr) - before):
        if len(found) >= _SCRATCH_SHOWN or under_any(path, _NOT_SCRATCH):
            continue
        seen = rt.files.read(vctr, path, _SCRATCH_CAP_BYTES)
        if seen.kind is FileKind.REGULAR and seen.data.strip():
            stripped = seen.data.translate(None, b" \t\r\n")
            found.append({"path": path, "sha256": hashlib.sha256(stripped).hexdigest()})
    return found


def written_after(reward_dir: Path, reward_paths: Iterable[str], ended_ns: int) -> tuple[str, ...]:
    """The reward files in ``reward_dir`` last written after test.sh ended (``ended_ns``,
    the wall clock): by a process left running in the verifier's container, never by
    test.sh. File times come from the same clock, coarser, so a write just after the end
    can look earlier, never the reverse."""
    late: list[str] = []
    for path in reward_paths:
        written = _written_ns(reward_dir, posixpath.basename(path))
        if written is not None and written > ended_ns:
            after = (written - ended_ns) / 1e9
            late.append(f"{path} (written {after:.3f} s after test.sh ended)")
    return tuple(late)


def _written_ns(folder: Path, name: str) -> int | None:
    """When ``folder/name`` was last written (not following a link), or None."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False).st_mtime_ns
    except OSError:
        return None
    finally:
        os.close(fd)
