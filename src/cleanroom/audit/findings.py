"""What an audit concludes about one task, from the runs it made (pure).

Each check ends in one of three ways: passed, a flag with its evidence, or "could not
audit" with the reason of the run that was `invalid`. An invalid run is the
infrastructure's (Docker, a getter that could not run, a timeout), so it is never turned
into a flag of the task's own; the one exception is an image that does not build, which
is the task's own environment and is flagged with its build log.

Flags come in three severities. A `task` flag is a problem of the task (its environment
does not build, it passes with no work, its oracle fails, it is flaky, its answers are
visible to the agent, its tests pass when every file the oracle wrote is a program that
succeeds at once, an OSWorld checker accepts a near miss or fails its gold state).
`naive` is what a naive verifier (``shared``, what Harbor does by default) lets through:
the fix is the verifier mode, not the task, so it is counted and shown but does not fail
the audit. `cleanroom` is a forging probe that succeeded under ``sealed``: a bug of cleanroom's own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from cleanroom.audit.probes import ran_configuration
from cleanroom.core.outcomes import Outcome

EVIDENCE_CHARS = 1500


class Flag(StrEnum):
    BUILD_FAILS = "build_fails"
    PASSES_WITH_NO_WORK = "passes_with_no_work"
    ORACLE_FAILS = "oracle_fails"
    FLAKY = "flaky"
    ANSWERS_VISIBLE = "answers_visible"
    NEAR_MISS_ACCEPTED = "near_miss_accepted"
    GOLD_FAILS = "gold_fails"
    TRUSTS_AGENT_EXIT = "trusts_agent_exit"
    FORGEABLE_SHARED = "forgeable_shared"
    FORGEABLE_SEALED = "forgeable_sealed"

    @property
    def severity(self) -> str:
        """``task``, ``naive`` (the naive verifier's exposure) or ``cleanroom`` (a bug)."""
        if self is Flag.FORGEABLE_SHARED:
            return "naive"
        if self is Flag.FORGEABLE_SEALED:
            return "cleanroom"
        return "task"

    @property
    def fails_audit(self) -> bool:
        """Whether a task with this flag makes the audit exit 1."""
        return self.severity != "naive"


@dataclass(frozen=True)
class RunRecord:
    """One run an audit made: what ran (``label``), in which mode, and its outcome."""

    label: str
    mode: str
    outcome: Mapping[str, Any]

    @classmethod
    def of(cls, label: str, mode: str, outcome: Outcome) -> RunRecord:
        return cls(label, mode, outcome.to_json())

    @property
    def status(self) -> str:
        return str(self.outcome["outcome"])

    @property
    def score(self) -> float | None:
        score = self.outcome.get("score")
        return None if score is None else float(score)

    @property
    def valid(self) -> bool:
        return self.status != "invalid"

    @property
    def reason(self) -> str | None:
        reason = self.outcome.get("reason")
        return None if reason is None else str(reason)

    def describe(self) -> str:
        """One line: the run, its outcome and score or reason."""
        got = f"score {self.score:g}" if self.score is not None else f"{self.reason}"
        extra = f" ({self.reason})" if self.valid and self.reason else ""
        return f"{self.label} [{self.mode}]: {self.status}, {got}{extra}"

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "mode": self.mode, "outcome": dict(self.outcome)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        return cls(str(data["label"]), str(data["mode"]), dict(data["outcome"]))


@dataclass(frozen=True)
class Finding:
    """A flag raised on a task, with the evidence a reader needs to check it."""

    flag: Flag
    evidence: str
    runs: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "flag": self.flag.value,
            "severity": self.flag.severity,
            "evidence": self.evidence,
            "runs": list(self.runs),
        }


@dataclass(frozen=True)
class Unaudited:
    """A check that could not be made, with the reason of the run that was invalid."""

    check: str
    reason: str
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "reason": self.reason, "detail": self.detail}


NOT_RUN = "not run"
# The reason of a stage that went the wrong way over files made here (a mirror made by
# `made_files`), not OSWorld's: those files decide it, so it is no finding on the checker.
MADE_FILES = "made_files"


class StageResult(StrEnum):
    """How one stage of an OSWorld task's execution audit ended."""

    AS_EXPECTED = "as expected"  # a sound checker's answer
    WRONG = "wrong"  # the checker's fault: flagged
    INVALID = "invalid"  # the infrastructure's: a check not made
    NOT_RUN = "not run"  # the stage does not apply, or could not be set up


@dataclass(frozen=True)
class Stage:
    """One stage of an execution audit (``t0``, ``noop``, ``gold``): what a sound
    checker gives, how it ended, the score, and a few words (the gold state, the reason
    of an invalid run, why the stage did not run)."""

    name: str
    expect: str  # "success" or "failure"
    result: StageResult
    score: float | None = None
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "expect": self.expect,
            "result": self.result.value,
            "score": self.score,
            "why": self.why,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Stage:
        score = data.get("score")
        return cls(
            str(data["name"]),
            str(data["expect"]),
            StageResult(data["result"]),
            None if score is None else float(score),
            str(data.get("why", "")),
        )


@dataclass(frozen=True)
class TaskAudit:
    """Everything the audit concluded about one task, and the runs behind it."""

    findings: tuple[Finding, ...] = ()
    unaudited: tuple[Unaudited, ...] = ()
    runs: tuple[RunRecord, ...] = ()
    notes: tuple[str, ...] = ()
    # An OSWorld task audited by execution: each stage as the table shows it.
    stages: tuple[Stage, ...] = ()
    # Why the task was not run at all (what it needs that this machine lacks); "" if it ran.
    not_run: str = ""

    @property
    def flags(self) -> list[Flag]:
        return [f.flag for f in self.findings]

    @property
    def fails_audit(self) -> bool:
        return any(f.fails_audit for f in self.flags)

    @property
    def verdict(self) -> str:
        """``flagged``, ``could not audit`` (no flag, some check not made), ``not run``
        (the task needs what this machine lacks) or ``clean``."""
        if self.not_run:
            return NOT_RUN
        if self.fails_audit:
            return "flagged"
        if self.unaudited:
            return "could not audit"
        return "clean"

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "flags": [f.value for f in self.flags],
            "findings": [f.to_json() for f in self.findings],
            "unaudited": [u.to_json() for u in self.unaudited],
            "runs": [r.to_json() for r in self.runs],
            "notes": list(self.notes),
            "stages": [s.to_json() for s in self.stages],
            "not_run": self.not_run,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskAudit:
        return cls(
            tuple(
                Finding(Flag(f["flag"]), f["evidence"], tuple(f["runs"])) for f in data["findings"]
            ),
            tuple(Unaudited(u["check"], u["reason"], u["detail"]) for u in data["unaudited"]),
            tuple(RunRecord.from_json(r) for r in data["runs"]),
            tuple(data.get("notes", ())),
            tuple(Stage.from_json(s) for s in data.get("stages", ())),
            str(data.get("not_run", "")),
        )


def could_not_audit(check: str, reason: str, detail: str = "") -> TaskAudit:
    """A task none of whose checks could be made (a task folder that does not load, an
    OSWorld task with no oracle, a harness error)."""
    return TaskAudit(unaudited=(Unaudited(check, reason, detail[:EVIDENCE_CHARS]),))


# Container tasks -----------------------------------------------------------------------


@dataclass
class ContainerRuns:
    """The runs of a container task's audit, as `job` made them, before judging."""

    noop: RunRecord | None = None
    # The oracle's runs, or (for a task with no solution) the no-op's repeats.
    repeats: list[RunRecord] = field(default_factory=list)
    has_oracle: bool = True
    answers: RunRecord | None = None
    visible: list[dict[str, str]] = field(default_factory=list)
    # Per probe id: its run under shared and under sealed (the forging probes, and the
    # link probe when it had an output of the oracle's to link).
    probes: dict[str, tuple[RunRecord, RunRecord]] = field(default_factory=dict)
    # The code-under-test probe (`probes.OracleProbe.SUCCEED`) under sealed.
    succeed: RunRecord | None = None
    # The names probe (`probes.OracleProbe.NAMES`) under shared and sealed, when it
    # changed the tests' outcome under shared.
    names: tuple[RunRecord, RunRecord] | None = None
    # Runs made and judged not applicable, with why (a probe with nothing to replace).
    skipped: list[tuple[RunRecord, str]] = field(default_factory=list)
    # What the audit did not run, and why.
    notes: list[str] = field(default_factory=list)

    def all_runs(self) -> tuple[RunRecord, ...]:
        runs = [r for r in (self.noop,) if r is not None] + list(self.repeats)
        runs += [self.answers] if self.answers is not None else []
        for shared, sealed in self.probes.values():
            runs += [shared, sealed]
        runs += [self.succeed] if self.succeed is not None else []
        runs += list(self.names) if self.names is not None else []
        runs += [run for run, _ in self.skipped]
        return tuple(runs)


# The note on a container task with no solution/solve.sh: what could not be checked.
NO_ORACLE = (
    "no oracle (solution/solve.sh): oracle_fails was not checked, and flakiness was "
    "judged on the no-op's repeats"
)


def build_failed(run: RunRecord) -> bool:
    """Whether a run ended because the task's image could not be built."""
    return not run.valid and "build_log" in run.outcome.get("details", {})


def judge_container(runs: ContainerRuns) -> TaskAudit:
    """Flags and unmade checks of a container task, from its runs."""
    findings: list[Finding] = []
    unaudited: list[Unaudited] = []
    noop = runs.noop
    if noop is not None and build_failed(noop):
        log = str(noop.outcome["details"]["build_log"])
        findings.append(Finding(Flag.BUILD_FAILS, log[-EVIDENCE_CHARS:], (noop.label,)))
        return TaskAudit(tuple(findings), (), runs.all_runs())
    truth = 0.0
    if noop is None or not noop.valid:
        unaudited.append(_unaudited("passes with no work", noop))
    else:
        truth = noop.score or 0.0
        if noop.status == "success":
            findings.append(Finding(Flag.PASSES_WITH_NO_WORK, _evidence(noop), (noop.describe(),)))
    _judge_repeats(runs, findings, unaudited)
    if runs.answers is not None:
        if not runs.answers.valid:
            unaudited.append(_unaudited("answers visible", runs.answers))
        elif runs.visible:
            shown = "; ".join(f"{v['path']} (= {v['matches']})" for v in runs.visible)
            findings.append(
                Finding(
                    Flag.ANSWERS_VISIBLE,
                    f"readable by the agent during its phase: {shown}",
                    (runs.answers.describe(),),
                )
            )
    _judge_probes(runs, truth, findings, unaudited)
    if runs.names is not None:
        _judge_names(runs.names, runs.repeats[0], findings, unaudited)
    notes = [] if runs.has_oracle else [NO_ORACLE]
    notes += _judge_succeed(runs.succeed, truth, findings, unaudited)
    notes += [f"{run.label}: {why}" for run, why in runs.skipped]
    notes += runs.notes
    return TaskAudit(tuple(findings), tuple(unaudited), runs.all_runs(), tuple(notes))


def names_followed(probe: RunRecord, oracle: RunRecord) -> bool:
    """Whether the names probe changed what the oracle's work scores: the tests resolved
    a name through the agent's name files (or a lookup of theirs never ended)."""
    if not oracle.valid or oracle.status != "success":
        return False
    return not probe.valid or (probe.score or 0.0) < (oracle.score or 0.0)


def _judge_names(
    runs: tuple[RunRecord, RunRecord],
    oracle: RunRecord,
    findings: list[Finding],
    unaudited: list[Unaudited],
) -> None:
    """The names probe: what a naive verifier resolves through the agent's files is its
    exposure; a sealed verifier that does is cleanroom's bug."""
    shared, sealed = runs
    moved = (
        "the tests resolve names through the agent's /etc/hosts: one line sends a "
        "reference service they ask to a fake of the agent's"
    )
    findings.append(Finding(Flag.FORGEABLE_SHARED, moved, (shared.describe(), oracle.describe())))
    if not sealed.valid:
        unaudited.append(_unaudited("names probe under sealed", sealed))
    elif names_followed(sealed, oracle):
        findings.append(
            Finding(
                Flag.FORGEABLE_SEALED,
                "CLEANROOM BUG: the sealed verifier resolved names through the agent's /etc/hosts",
                (sealed.describe(), oracle.describe()),
            )
        )


# The reasons a sealed verifier gives a code-under-test probe when it saw through it.
_SEEN_THROUGH = frozenset({"runner_cut_short", "tamper"})


def _judge_succeed(
    run: RunRecord | None, truth: float, findings: list[Finding], unaudited: list[Unaudited]
) -> list[str]:
    """The code-under-test probe: tests that pass when every file the oracle wrote
    succeeds at once trust the exit of the agent's code (a task flag); a sealed verifier
    that saw through it (the runner witness) is noted."""
    if run is None:
        return []
    if not run.valid:
        unaudited.append(_unaudited("code-under-test probe", run))
        return []
    if run.status == "success" and (run.score or 0.0) > truth:
        findings.append(
            Finding(
                Flag.TRUSTS_AGENT_EXIT,
                "the tests pass when every file the oracle wrote is a program that succeeds "
                "at once and prints nothing: they trust the exit of the agent's code",
                (run.describe(),),
            )
        )
        return []
    if run.reason in _SEEN_THROUGH:
        return [
            f"{run.describe()}: sealed saw the code under test cut its tests short; the "
            f"tests themselves trust its exit"
        ]
    return []


def _judge_repeats(
    runs: ContainerRuns, findings: list[Finding], unaudited: list[Unaudited]
) -> None:
    # Without an oracle, the first no-op is the first of the repeated runs.
    first = [] if runs.has_oracle or runs.noop is None else [runs.noop]
    repeats = first + runs.repeats
    if not runs.repeats:
        return
    valid = [r for r in repeats if r.valid]
    invalid = [r for r in repeats if not r.valid]
    lines = tuple(r.describe() for r in repeats)
    if runs.has_oracle:
        if not valid:
            unaudited.append(_unaudited("oracle passes", invalid[0]))
        elif all(r.status != "success" for r in valid):
            findings.append(Finding(Flag.ORACLE_FAILS, _evidence(valid[0]), lines))
    if len({(r.status, r.score, r.reason) for r in valid}) > 1:
        what = "the oracle" if runs.has_oracle else "the no-op (the task has no oracle)"
        findings.append(
            Finding(Flag.FLAKY, f"{what} gave different outcomes on the same task", lines)
        )
    elif invalid:
        unaudited.append(_unaudited("flaky", invalid[0]))


def _judge_probes(
    runs: ContainerRuns, truth: float, findings: list[Finding], unaudited: list[Unaudited]
) -> None:
    fooled_shared: list[str] = []
    fooled_sealed: list[str] = []
    for probe, (shared, sealed) in runs.probes.items():
        if _fooled(shared, truth):
            fooled_shared.append(f"{probe}: {_describe_fooled(shared)}")
        if _fooled(sealed, truth):
            fooled_sealed.append(f"{probe}: {_describe_fooled(sealed)}")
        elif not sealed.valid:
            unaudited.append(_unaudited(f"probe {probe} under sealed", sealed))
    if fooled_shared:
        findings.append(
            Finding(
                Flag.FORGEABLE_SHARED,
                f"a naive verifier (shared) scores forging probes above the no-op's {truth:g}",
                tuple(fooled_shared),
            )
        )
    if fooled_sealed:
        findings.append(
            Finding(
                Flag.FORGEABLE_SEALED,
                "CLEANROOM BUG: a forging probe scored above the no-op under sealed",
                tuple(fooled_sealed),
            )
        )


def _fooled(run: RunRecord, truth: float) -> bool:
    """Whether a probe's run fooled its verifier: a score above the truth, or tests that
    ran configuration the probe left (`probes.ran_configuration`)."""
    return run.valid and ((run.score or 0.0) > truth or ran_configuration(run.outcome))


def _describe_fooled(run: RunRecord) -> str:
    ran = ran_configuration(run.outcome)
    return run.describe() + (": its tests ran the configuration the probe left" if ran else "")


def _unaudited(check: str, run: RunRecord | None) -> Unaudited:
    if run is None:
        return Unaudited(check, "not run")
    detail = str(run.outcome.get("detail", ""))[:EVIDENCE_CHARS]
    return Unaudited(check, run.reason or "invalid", f"{run.label}: {detail}")


def _evidence(run: RunRecord) -> str:
    details = run.outcome.get("details", {})
    tail = str(details.get("test_output_tail", ""))[-EVIDENCE_CHARS:]
    head = run.describe()
    return f"{head}\n{tail}".strip() if tail else head


# OSWorld tasks -------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckerRun:
    """One run of an OSWorld checker: the phase, what it must give, what it gave."""

    record: RunRecord
    expect: str  # "success" or "failure"
    near_miss: str = ""  # why this action is known to be wrong, for a near miss
    gold: str = ""  # what the gold state is, for a gold run (no oracle: a file placed, FAIL)

    def stage(self) -> Stage:
        """The run as a stage of the execution audit's table."""
        record = self.record
        if not record.valid:
            return Stage(record.label, self.expect, StageResult.INVALID, None, record.reason or "")
        result = StageResult.AS_EXPECTED if record.status == self.expect else StageResult.WRONG
        return Stage(record.label, self.expect, result, record.score, self.gold)


def judge_osworld(
    runs: list[CheckerRun],
    *,
    skipped: tuple[Stage, ...] = (),
    unmade: tuple[Unaudited, ...] = (),
    notes: tuple[str, ...] = (),
    made_files: bool = False,
) -> TaskAudit:
    """Flags of an OSWorld checker: passing at t=0 or after a no-op, failing after its
    oracle or in its gold state, accepting a near miss; an invalid run is a check not made.

    ``skipped`` are stages that did not run (with why), ``unmade`` checks that could not
    be set up (the infrastructure's), ``notes`` what a reader should know besides. With
    ``made_files`` (the task's files were made here, not OSWorld's) a stage that went the
    wrong way is a check not made (`MADE_FILES`), with the same evidence: the made files,
    which lack what the task's own hold, may be what decided it.
    """
    findings: list[Finding] = []
    unaudited: list[Unaudited] = list(unmade)
    for run in runs:
        record = run.record
        if not record.valid:
            unaudited.append(_unaudited(record.label, record))
            continue
        if record.status == run.expect:
            continue
        if run.near_miss:
            flag, why = Flag.NEAR_MISS_ACCEPTED, f"accepts a known-wrong action: {run.near_miss}"
        elif run.gold:
            flag, why = Flag.GOLD_FAILS, f"the gold state fails the checker: {run.gold}"
        elif run.expect == "success":
            flag, why = Flag.ORACLE_FAILS, "the known-good end state fails the checker"
        else:
            flag, why = Flag.PASSES_WITH_NO_WORK, f"the checker passes {record.label}"
        evidence = checker_evidence(record.outcome)
        if made_files and not run.near_miss:
            detail = f"{why}, over made files (not OSWorld's)\n{evidence}".strip()
            unaudited.append(Unaudited(record.label, MADE_FILES, detail))
            continue
        findings.append(Finding(flag, f"{why}\n{evidence}".strip(), (record.describe(),)))
    stages = tuple(r.stage() for r in runs) + skipped
    order = {name: n for n, name in enumerate(STAGE_ORDER)}
    stages = tuple(sorted(stages, key=lambda s: order.get(s.name, len(order))))
    return TaskAudit(
        tuple(findings), tuple(unaudited), tuple(r.record for r in runs), notes, stages
    )


# The execution audit's stages, in the table's order.
STAGE_ORDER = ("t0", "noop", "gold")


def checker_evidence(outcome: Mapping[str, Any]) -> str:
    """What an OSWorld checker read and decided, one line per getter and metric, from an
    outcome's details (the evaluation's own record; empty when it holds none)."""
    details = outcome.get("details", {})
    lines = [f"scored by: {details['scored_by']}"] if details.get("scored_by") else []
    for g in details.get("getters", []):
        if "error" in g:
            got = f"error: {g['error']}"
        elif "missing_file" in g:
            got = f"missing file {g['missing_file']}"
        else:
            got = json.dumps(g.get("value"), default=str)[:200]
        lines.append(f"getter {g.get('role')}[{g.get('call')}] {g.get('type')}: {got}")
    for m in details.get("metrics", []):
        got = m.get("score", m.get("error"))
        extra = f" ({m['result']})" if m.get("result") else ""
        lines.append(f"metric[{m.get('call')}] {m.get('func')}: {got}{extra}"[:300])
    return "\n".join(lines)[:EVIDENCE_CHARS]
