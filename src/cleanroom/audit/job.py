"""Running one task's audit: the effects behind `findings`.

A container task runs through the container verifier (`verify_task`), one rollout per
check: the no-op under ``sealed`` (which also builds the image), the oracle repeated,
the answers probe, each forging probe under ``shared`` and ``sealed``, and the probes
that start from the oracle's work: the link probe under both (when an output of the
oracle's equals a file of the tests) and the code-under-test probe under ``sealed``. An OSWorld
task runs through the checker validator's phases (`run_phase`) and its near misses.
Whatever goes wrong, including a bug of cleanroom's own, ends as a `TaskAudit` with the
check that could not be made and why, never as a traceback.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cleanroom.audit.findings import (
    CheckerRun,
    ContainerRuns,
    RunRecord,
    TaskAudit,
    build_failed,
    could_not_audit,
    judge_container,
    judge_osworld,
    names_followed,
)
from cleanroom.audit.jobs import AuditJob, JobKind
from cleanroom.audit.osworld_spec import SpecError, load_spec
from cleanroom.audit.probes import (
    ANSWERS_LIST,
    ANSWERS_SCRIPT,
    DEFAULT_PROBES,
    SCRATCH_LIST,
    TESTS_LIST,
    OracleProbe,
    answer_files,
    answers_list,
    digests_of_tests,
    forging_probes,
    names_probe_script,
    oracle_probe_script,
    probe_replaced,
    ran_configuration,
    scratch_digests,
    visible_answers,
)
from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task, TaskError, load_task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task

# Every container an audit job starts carries this label with the job's id, so that what a
# lost job left behind can be found and removed.
JOB_LABEL = "cleanroom.audit.job"
TRACE_CHARS = 3000
DESKTOP_POOL_NEEDED = (
    "an OSWorld task without an .audit.toml is audited by execution in a pool of desktops,"
    " on this machine only (not on Ray)"
)


@dataclass(frozen=True)
class AuditSettings:
    """How each task is audited."""

    repeats: int = 3
    probes: tuple[str, ...] = DEFAULT_PROBES
    image_map: tuple[tuple[str, str], ...] = ()
    action_timeout: float = 120.0
    # Where OSWorld tasks' files come from (`Mirror.parse`: a folder or a base URL); None
    # means none: a task that fetches files is not run.
    mirror: str | None = None

    def __post_init__(self) -> None:
        if self.repeats < 2:
            raise ValueError(f"repeats must be 2 or more to see a flaky task, got {self.repeats}")
        for attack in forging_probes(self.probes):
            if attack.assets:
                raise ValueError(f"probe {attack.id} needs compiled assets; audits cannot run it")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "repeats": self.repeats,
            "probes": list(self.probes),
            "image_map": [list(p) for p in self.image_map],
            "action_timeout": self.action_timeout,
        }
        if self.mirror is not None:  # absent, so an audit from before the key resumes
            data["mirror"] = self.mirror
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuditSettings:
        return cls(
            int(data["repeats"]),
            tuple(data["probes"]),
            tuple((str(a), str(b)) for a, b in data["image_map"]),
            float(data["action_timeout"]),
            data.get("mirror"),
        )


def run_job(job: AuditJob, settings: AuditSettings) -> TaskAudit:
    """Audit one task; every failure ends as a check that could not be made."""
    try:
        if job.kind is JobKind.CONTAINER:
            return _audit_container(Path(job.path), job.id, settings)
        if job.kind is JobKind.OSWORLD_DESKTOP:
            # Its environment comes from a pool of desktops (`desktop_pool.DesktopJobPool`).
            return could_not_audit(
                "desktop", Reason.VERIFIER_UNAVAILABLE.value, DESKTOP_POOL_NEEDED
            )
        return _audit_osworld(Path(job.path), settings)
    except Exception as exc:  # a bug of cleanroom's own: still a record, with its trace
        trace = "".join(traceback.format_exception(exc))[-TRACE_CHARS:]
        return could_not_audit("audit", Reason.HARNESS_ERROR.value, trace)


def remove_job_containers(job_id: str) -> int:
    """Remove the containers a job left (a job whose node was lost); images are kept."""
    try:
        runtime = DockerRuntime.connect()
    except RuntimeUnavailable:
        return 0
    return runtime.remove_labelled({JOB_LABEL: job_id}, images=False)


def _audit_container(task_dir: Path, job_id: str, settings: AuditSettings) -> TaskAudit:
    try:
        task = load_task(task_dir)
    except TaskError as exc:
        return could_not_audit("task loads", Reason.ENVIRONMENT_ERROR.value, str(exc))
    try:
        runtime = DockerRuntime.connect(labels={JOB_LABEL: job_id})
    except RuntimeUnavailable as exc:
        return could_not_audit("docker", Reason.VERIFIER_UNAVAILABLE.value, str(exc))
    sealed = VerifyOptions(Mode.SEALED, image_map=settings.image_map)
    shared = VerifyOptions(Mode.SHARED, image_map=settings.image_map)

    def run(label: str, agent: AgentSpec, options: VerifyOptions) -> RunRecord:
        return RunRecord.of(label, options.mode.value, verify_task(task, agent, runtime, options))

    runs = ContainerRuns(has_oracle=_has_oracle(task))
    runs.noop = run("no-op", AgentSpec.noop(), sealed)
    if build_failed(runs.noop):
        return judge_container(runs)
    if runs.has_oracle:
        # The first run also lists what test.sh wrote, for the scratch probe.
        recording = replace(sealed, record_verifier_writes=True)
        runs.repeats = [
            run(f"oracle #{n}", AgentSpec.solution(), recording if n == 1 else sealed)
            for n in range(1, settings.repeats + 1)
        ]
    else:
        runs.repeats = [
            run(f"no-op #{n}", AgentSpec.noop(), sealed) for n in range(2, settings.repeats + 1)
        ]
    _probe_answers(task, runs, run, sealed)
    for attack in forging_probes(settings.probes):
        agent = AgentSpec.script(attack.script, f"probe {attack.id}")
        runs.probes[attack.id] = (
            run(f"probe {attack.id}", agent, shared),
            run(f"probe {attack.id}", agent, sealed),
        )
    if runs.has_oracle and not task.steps:
        _probe_from_oracle(task, runs, run, shared, sealed)
    return judge_container(runs)


def _probe_from_oracle(
    task: Task, runs: ContainerRuns, run: Runner, shared: VerifyOptions, sealed: VerifyOptions
) -> None:
    """The link probes, to the tests' files and to what test.sh wrote (each under shared
    beside its control, then under sealed when the links did the forging), and the
    code-under-test probe (under sealed)."""
    config = task.config
    workdir = config.environment.workdir
    roots = [workdir] if workdir and workdir != "/" else []
    roots += [*config.verifier.state, *(e.source for e in config.artifact_entries)]
    written = runs.repeats[0].outcome.get("details", {}).get("verifier_wrote", [])
    lists = {
        TESTS_LIST: digests_of_tests(task.tests_dirs),
        SCRATCH_LIST: scratch_digests(written if isinstance(written, list) else []),
    }

    def agent(kind: OracleProbe) -> AgentSpec:
        script = oracle_probe_script(kind, roots)
        files = ((kind.digests, lists[kind.digests]),)
        return AgentSpec.script_with_solution(script, f"probe {kind.value}", files)

    def probe(kind: OracleProbe, options: VerifyOptions) -> RunRecord | None:
        """The probe's run, or None when it had nothing to replace (noted)."""
        record = run(f"probe {kind.value}", agent(kind), options)
        phase = record.outcome.get("details", {}).get("agent_phase", {})
        if record.valid and not probe_replaced(str(phase.get("output_tail", ""))):
            runs.skipped.append((record, _NOTHING_TO_REPLACE[kind]))
            return None
        return record

    for kind, control_kind in _LINK_PROBES:
        if kind is OracleProbe.SCRATCH and not lists[kind.digests]:
            runs.notes.append(
                f"probe {kind.value}: not run: test.sh wrote no file beyond its reward when "
                "it verified the oracle's work"
            )
            continue
        linked = probe(kind, shared)
        control = probe(control_kind, shared) if linked is not None else None
        if linked is None or control is None:
            continue
        if control.valid and (control.score or 0.0) >= (linked.score or 0.0):
            why = f"the tests score as well without the outputs {kind.value} links: no link forged"
            runs.skipped += [(linked, why), (control, why)]
        else:
            runs.skipped.append((control, f"{kind.value}'s control: those outputs removed"))
            runs.probes[kind.value] = (linked, run(f"probe {kind.value}", agent(kind), sealed))
    _probe_configured(roots, runs, run, shared, sealed)
    if config.verifier.live_processes:
        _probe_names(task, runs, run, shared, sealed)
        # What is graded is a process the oracle left running, not the files it wrote.
        runs.notes.append(
            "probe succeed-at-once: not run: the verifier grades the agent's running "
            "processes (live_processes), not the files they came from"
        )
    else:
        runs.succeed = probe(OracleProbe.SUCCEED, sealed)


def _probe_configured(
    roots: list[str], runs: ContainerRuns, run: Runner, shared: VerifyOptions, sealed: VerifyOptions
) -> None:
    """The configured-tools probe under shared, and under sealed when the tests ran the
    configuration it left there."""
    agent = AgentSpec.script_with_solution(
        oracle_probe_script(OracleProbe.CONFIGURE, roots),
        f"probe {OracleProbe.CONFIGURE.value}",
        (),
    )
    label = f"probe {OracleProbe.CONFIGURE.value}"
    naive = run(label, agent, shared)
    phase = naive.outcome.get("details", {}).get("agent_phase", {})
    if naive.valid and not probe_replaced(str(phase.get("output_tail", ""))):
        runs.skipped.append(
            (naive, "not applicable: no git repository or home folder in the state")
        )
    elif naive.valid and not ran_configuration(naive.outcome):
        runs.skipped.append((naive, "the tests ran none of the configuration the probe left"))
    else:
        runs.probes[OracleProbe.CONFIGURE.value] = (naive, run(label, agent, sealed))


def _probe_names(
    task: Task, runs: ContainerRuns, run: Runner, shared: VerifyOptions, sealed: VerifyOptions
) -> None:
    """The names probe under shared, and under sealed when it changed the tests' outcome
    there (the oracle's processes answer, at names the agent's files send nowhere)."""
    services = [s.name for s in task.compose.services] if task.compose is not None else []
    label = f"probe {OracleProbe.NAMES.value}"
    agent = AgentSpec.script_with_solution(names_probe_script(services), label, ())
    naive = run(label, agent, shared)
    phase = naive.outcome.get("details", {}).get("agent_phase", {})
    if naive.valid and not probe_replaced(str(phase.get("output_tail", ""))):
        runs.skipped.append((naive, "not applicable: the agent cannot write /etc/hosts"))
    elif not names_followed(naive, runs.repeats[0]):
        runs.skipped.append((naive, "the tests score as before: they resolve no name it moved"))
    else:
        runs.names = (naive, run(label, agent, sealed))


# Each link probe with its control.
_LINK_PROBES = (
    (OracleProbe.LINK, OracleProbe.REMOVE),
    (OracleProbe.SCRATCH, OracleProbe.SCRATCH_REMOVE),
)
_NO_SCRATCH = "not applicable: no output of the oracle's equals a file test.sh wrote"
_NOTHING_TO_REPLACE = {
    OracleProbe.LINK: "not applicable: no output of the oracle's equals a file of the tests",
    OracleProbe.REMOVE: "not applicable: no output of the oracle's equals a file of the tests",
    OracleProbe.SCRATCH: _NO_SCRATCH,
    OracleProbe.SCRATCH_REMOVE: _NO_SCRATCH,
    OracleProbe.SUCCEED: "not applicable: the oracle wrote no file where the verifier looks",
}


def _has_oracle(task: Task) -> bool:
    """Whether the task's solution can run: every step's, for a multi-step task."""
    if task.steps:
        return all((step.solution_dir / "solve.sh").is_file() for step in task.steps)
    return (task.solution_dir / "solve.sh").is_file()


Runner = Callable[[str, AgentSpec, VerifyOptions], RunRecord]


def _probe_answers(task: Task, runs: ContainerRuns, run: Runner, options: VerifyOptions) -> None:
    files = answer_files(task.root)
    if not files:
        return
    agent = AgentSpec.script(
        ANSWERS_SCRIPT, "answers probe", files=((ANSWERS_LIST, answers_list(files)),)
    )
    record = run("answers probe", agent, options)
    runs.answers = record
    phase = record.outcome.get("details", {}).get("agent_phase", {})
    runs.visible = visible_answers(str(phase.get("output_tail", "")), files)


def _audit_osworld(task_file: Path, settings: AuditSettings) -> TaskAudit:
    # Imported here: the OSWorld stack is only needed for OSWorld tasks.
    from cleanroom.guests import open_guest
    from cleanroom.guests.base import GuestError
    from cleanroom.verifiers.osworld.settings import CheckSettings
    from cleanroom.verifiers.osworld.task import TaskFileError
    from cleanroom.verifiers.osworld.task import load_task as load_osworld
    from cleanroom.verifiers.osworld.validate import NOOP_ACTION, run_phase

    try:
        spec = load_spec(task_file)
        task = load_osworld(task_file)
    except (SpecError, TaskFileError) as exc:
        return could_not_audit("task loads", Reason.ENVIRONMENT_ERROR.value, str(exc))
    plan: list[tuple[str, Status, str | None, str]] = [
        ("t0", Status.FAILURE, None, ""),
        ("oracle", Status.SUCCESS, spec.oracle, ""),
        ("noop", Status.FAILURE, NOOP_ACTION, ""),
    ]
    plan += [
        (f"near miss {n}", Status.FAILURE, miss.action, f"{miss.why} ({miss.action})")
        for n, miss in enumerate(spec.near_misses, start=1)
    ]
    checks: list[CheckerRun] = []
    try:
        base = open_guest(spec.guest)
    except GuestError as exc:
        return could_not_audit("guest", Reason.ENVIRONMENT_ERROR.value, str(exc))
    with base:
        for phase, expect, action, why in plan:
            result = run_phase(
                phase, expect, task, base, CheckSettings(), action, settings.action_timeout
            )
            record = RunRecord.of(phase, f"guest {spec.guest}", result.outcome)
            checks.append(CheckerRun(record, expect.value, why))
    return judge_osworld(checks)
