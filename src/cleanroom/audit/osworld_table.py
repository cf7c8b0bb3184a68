"""The execution audit of OSWorld tasks as a table: per task its t=0, no-op and gold
stages and its verdict, for the terminal and as a Markdown page the docs carry (pure).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from cleanroom.audit.findings import MADE_FILES, NOT_RUN, STAGE_ORDER, Stage, StageResult
from cleanroom.audit.jobs import JobKind
from cleanroom.audit.records import JobRecord
from cleanroom.audit.summary import AuditSummary

# The verdicts of a task whose audit ended; any other is a job not done yet.
ENDED = frozenset({"clean", "flagged", "could not audit", NOT_RUN})
STAGE_HEADS = {"t0": "t=0", "noop": "no-op", "gold": "gold"}
# What a sound checker gives in each stage, as the page explains it.
STAGE_RULES = {
    "t0": "after the task's setup, before any action: the checker must fail",
    "noop": "after `WAIT` and `DONE`, with no action: the checker must fail",
    "gold": "a feasible task's expected file (a `cloud_file` or `vm_file` expected getter)"
    " placed where its `vm_file` result getter reads it, or an infeasible task's last"
    " action `FAIL`: the checker must pass",
}


@dataclass(frozen=True)
class AuditRow:
    """One task of the execution audit, as the table shows it."""

    task: str
    domain: str
    stages: dict[str, Stage]
    verdict: str
    why: str  # why the task was not run, or its first finding's or unmade check's words
    # The stages that went the wrong way over made files (no finding on the checker).
    over_made_files: frozenset[str] = frozenset()


def audit_rows(summary: AuditSummary) -> list[AuditRow]:
    """The rows of the OSWorld tasks audited by execution, by domain then task."""
    rows = [_row(summary, r) for r in summary.records if r.job.kind is JobKind.OSWORLD_DESKTOP]
    return sorted(rows, key=lambda r: (r.domain, r.task))


def _row(summary: AuditSummary, record: JobRecord) -> AuditRow:
    audit = record.audit
    stages = {s.name: s for s in audit.stages} if audit is not None else {}
    why = ""
    if audit is not None:
        if audit.not_run:
            why = audit.not_run
        elif audit.findings:
            why = audit.findings[0].evidence.splitlines()[0]
        elif audit.unaudited:
            gap = audit.unaudited[0]
            why = f"{gap.check}: {gap.detail.splitlines()[0] if gap.detail else gap.reason}"
    made = (
        frozenset(u.check for u in audit.unaudited if u.reason == MADE_FILES)
        if audit is not None
        else frozenset()
    )
    return AuditRow(
        record.job.name,
        Path(record.job.path).parent.name,
        stages,
        summary.verdict_of(record),
        why,
        made,
    )


def stage_cell(stage: Stage | None, over_made_files: bool = False) -> str:
    """A stage as one cell: what the checker gave, and whether that is a sound answer
    (or, ``over_made_files``, that made files decided it)."""
    if stage is None:
        return "-"
    if stage.result is StageResult.NOT_RUN:
        return "n/a"
    if stage.result is StageResult.INVALID:
        return f"invalid ({stage.why})" if stage.why else "invalid"
    passed = (stage.expect == "success") == (stage.result is StageResult.AS_EXPECTED)
    said = "passes" if passed else "fails"
    if stage.result is StageResult.AS_EXPECTED:
        return said
    return f"{said} (made files)" if over_made_files else f"{said.upper()} (wrong)"


def stage_counts(rows: list[AuditRow]) -> dict[str, Counter[str]]:
    """Per stage, how many tasks ended each way (`StageResult` values)."""
    return {
        name: Counter(r.stages[name].result.value for r in rows if name in r.stages)
        for name in STAGE_ORDER
    }


# An environment's home in a pool's folder (``<root>/<pool id>/homes/env01``), as a
# guest's error names it: written ``~`` on the page, which is then the same on every run.
_POOL_HOME = re.compile(r"/\S*?/[0-9a-f]+/homes/env\d+(?:\.b)?(?=/|\s|'|$)")


def _md(text: str) -> str:
    return _POOL_HOME.sub("~", text).replace("|", "\\|").replace("\n", " ")


@dataclass(frozen=True)
class PageSource:
    """How the page was made: the audit's command, and the command that made its mirror
    when the mirror's files were made here (`mirror_fill.made_files_in`), not fetched."""

    command: str
    made_mirror_command: str | None = None
    made_files: int = 0


# What made files mean for the stages, as the page says it.
MADE_FILES_NOTE = (
    "The task files are **made, not OSWorld's**: the mirror holds, for every dataset URL",
    "a task names, a small file of the kind its name says, seeded by its URL",
    "(`cleanroom osworld mirror --made`). So each task's setup, getters and metric run end",
    "to end, on files that are not the task's. At t=0 and after the no-op the checker",
    "compares the file the setup put there with a different made file; at gold it compares",
    "the made expected file with itself, so a pass there says the checker reads and",
    "compares what the pipeline produces, not that it accepts OSWorld's own expected file.",
    "A checker that looks for particular cells, slides or words fails on made files for",
    "want of them, and one that passes at t=0 may pass on what the made files lack (two",
    "documents with no images compare equal) rather than on what the task's files hold.",
    "So a stage that goes the wrong way over made files is no finding on the checker: the",
    "task is *could not audit*, the cell says *(made files)*, and the evidence is kept.",
)


def audit_markdown(summary: AuditSummary, source: PageSource | str) -> str:
    """The Markdown page of the audit; ``source`` says how it was made (shown on the
    page: a bare string is the audit's command alone)."""
    if isinstance(source, str):
        source = PageSource(source)
    rows = audit_rows(summary)
    verdicts = Counter(r.verdict for r in rows)
    unfinished = [r for r in rows if r.verdict not in ENDED]
    ran = len(rows) - verdicts[NOT_RUN] - len(unfinished)
    made = sum(bool(r.over_made_files) for r in rows if r.verdict == "could not audit")
    commands = [source.command]
    if source.made_mirror_command is not None:
        commands.insert(0, source.made_mirror_command)
    out = [
        "# OSWorld checkers audited by execution",
        "",
        "<!-- Generated: do not edit. Regenerate from the repository's root with",
        *(f"     {c}" for c in commands),
        "-->",
        "",
        "Made by",
        "",
        "```",
        *commands,
        "```",
        "",
        "Every task of OSWorld's task set that runs here, set up in an environment of a pool",
        "of desktops and checked by its own checker with no agent acting (see",
        "[the audit](audit.md#osworld-tasks-by-execution)). Each stage:",
        "",
    ]
    out += [f"- **{STAGE_HEADS[name]}**: {STAGE_RULES[name]}." for name in STAGE_ORDER]
    out += [
        "",
        "A stage is *invalid* when the infrastructure kept the check from being made (a",
        "setup step, a getter or a metric that could not run): that is never a flag on the",
        "checker. *n/a*: the task file names no gold state of these kinds.",
        "",
    ]
    if source.made_files:
        out += [*MADE_FILES_NOTE, f"The mirror held {source.made_files} made files.", ""]
    out += [
        "## Counts",
        "",
        f"- tasks: {len(rows)}; run: {ran}; not run: {verdicts[NOT_RUN]}"
        + (
            f"; not audited yet: {len(unfinished)} (the audit was stopped: the same"
            " command with its --run-dir goes on where it stopped)"
            if unfinished
            else ""
        ),
        f"- clean: {verdicts['clean']}; flagged: {verdicts['flagged']};"
        f" could not audit: {verdicts['could not audit']}"
        f" ({made} of them for a stage the made files decided)",
        "",
        "| stage | as expected | wrong | invalid | n/a |",
        "|---|---|---|---|---|",
    ]
    for name, counts in stage_counts(rows).items():
        numbers = [str(counts[result.value]) for result in StageResult]
        out.append(f"| {STAGE_HEADS[name]} | " + " | ".join(numbers) + " |")
    out += ["", "## Tasks run", ""]
    heads = ["task", "domain", *(STAGE_HEADS[n] for n in STAGE_ORDER), "verdict", "why"]
    out += ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for r in (r for r in rows if r.verdict != NOT_RUN and r.verdict in ENDED):
        cells = [stage_cell(r.stages.get(n), n in r.over_made_files) for n in STAGE_ORDER]
        out.append(
            f"| `{r.task}` | {r.domain} | "
            + " | ".join(_md(c) for c in cells)
            + f" | {r.verdict} | {_md(r.why)[:200]} |"
        )
    not_run = [r for r in rows if r.verdict == NOT_RUN]
    if not_run:
        reasons = Counter(r.why for r in not_run)
        out += ["", "## Not run", "", "| why | tasks |", "|---|---|"]
        out += [f"| {_md(why)} | {n} |" for why, n in reasons.most_common()]
    return "\n".join(out) + "\n"
