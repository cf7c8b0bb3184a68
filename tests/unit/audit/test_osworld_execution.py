"""The execution audit of OSWorld tasks, judged from its stages (pure): a checker that
passes with no work or fails its gold state is flagged with the checker's own record as
evidence, an invalid stage is a check not made, and a task that needs what this machine
lacks is not run, with coverage's reason."""

from __future__ import annotations

from pathlib import Path

from cleanroom.audit.desktop_job import files_made_here, not_run_reason
from cleanroom.audit.findings import (
    MADE_FILES,
    NOT_RUN,
    CheckerRun,
    Flag,
    RunRecord,
    Stage,
    StageResult,
    TaskAudit,
    judge_osworld,
)
from cleanroom.audit.jobs import AuditJob, JobKind
from cleanroom.audit.osworld_table import PageSource, audit_markdown, stage_cell
from cleanroom.audit.records import JobRecord
from cleanroom.audit.summary import EXIT_CLEAN, EXIT_FLAGGED, AuditSummary
from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.verifiers.osworld.mirror import Mirror
from cleanroom.verifiers.osworld.task import load_task

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "tests/data/osworld/evaluation_examples/examples"
DETAILS = {
    "getters": [
        {"call": 0, "role": "result", "type": "vm_command_line", "value": "100\n"},
        {"call": 0, "role": "expected", "type": "rule", "value": {"expected": "100\n"}},
    ],
    "metrics": [{"call": 0, "func": "exact_match", "score": 1.0}],
}


def run(stage: str, outcome: Outcome, expect: str = "failure", gold: str = "") -> CheckerRun:
    return CheckerRun(RunRecord.of(stage, "desktop", outcome), expect, gold=gold)


def test_a_checker_passing_at_t0_is_flagged_with_what_its_getters_and_metrics_gave() -> None:
    audit = judge_osworld([run("t0", Outcome.success(**DETAILS)), run("noop", Outcome.failure())])
    (finding,) = audit.findings
    assert finding.flag is Flag.PASSES_WITH_NO_WORK
    assert 'getter result[0] vm_command_line: "100\\n"' in finding.evidence
    assert "metric[0] exact_match: 1.0" in finding.evidence
    assert [s.result for s in audit.stages] == [StageResult.WRONG, StageResult.AS_EXPECTED]


def test_a_checker_failing_its_gold_state_is_flagged_gold_fails() -> None:
    audit = judge_osworld(
        [
            run("t0", Outcome.failure()),
            run("noop", Outcome.failure()),
            run("gold", Outcome.failure(**DETAILS), "success", gold="the expected file placed"),
        ]
    )
    assert audit.flags == [Flag.GOLD_FAILS]
    assert "the expected file placed" in audit.findings[0].evidence
    assert audit.verdict == "flagged"


def test_an_invalid_stage_is_a_check_not_made_never_a_flag() -> None:
    broken = Outcome.invalid(Reason.CHECKER_ERROR, "metric is_utc_0 raised IndexError")
    audit = judge_osworld([run("t0", broken), run("noop", Outcome.failure())])
    assert audit.flags == []
    assert audit.verdict == "could not audit"
    assert audit.stages[0] == Stage("t0", "failure", StageResult.INVALID, None, "checker_error")


def test_stages_keep_the_table_s_order_with_the_gold_stage_that_did_not_run() -> None:
    skipped = (Stage("gold", "success", StageResult.NOT_RUN, None, "no file"),)
    audit = judge_osworld(
        [run("noop", Outcome.failure()), run("t0", Outcome.failure())], skipped=skipped
    )
    assert [s.name for s in audit.stages] == ["t0", "noop", "gold"]
    assert audit.verdict == "clean"
    assert TaskAudit.from_json(audit.to_json()) == audit


def test_each_stage_cell_says_what_the_checker_gave_and_whether_it_is_wrong() -> None:
    assert stage_cell(Stage("t0", "failure", StageResult.AS_EXPECTED, 0.0)) == "fails"
    assert stage_cell(Stage("t0", "failure", StageResult.WRONG, 1.0)) == "PASSES (wrong)"
    assert stage_cell(Stage("gold", "success", StageResult.AS_EXPECTED, 1.0)) == "passes"
    assert stage_cell(Stage("gold", "success", StageResult.WRONG, 0.0)) == "FAILS (wrong)"
    invalid = Stage("t0", "failure", StageResult.INVALID, None, "checker_error")
    assert stage_cell(invalid) == "invalid (checker_error)"
    assert stage_cell(None) == "-"


def test_a_task_that_needs_what_this_machine_lacks_is_not_run_and_does_not_fail_the_audit() -> None:
    not_run = TaskAudit(not_run="needs VS Code")
    clean = judge_osworld([run("t0", Outcome.failure()), run("noop", Outcome.failure())])
    summary = AuditSummary((_record("a", not_run), _record("b", clean)), "run", "here", {})
    assert summary.verdict_counts() == {NOT_RUN: 1, "clean": 1}
    assert summary.exit_code == EXIT_CLEAN
    page = audit_markdown(summary, "cleanroom audit TASKS --markdown")
    assert "- tasks: 2; run: 1; not run: 1" in page
    assert "| `b` | os | fails | fails | - | clean |  |" in page
    assert "| needs VS Code | 1 |" in page


def test_a_page_over_made_files_gives_both_commands_at_its_top_and_says_the_files_are_made() -> (
    None
):
    clean = judge_osworld([run("t0", Outcome.failure()), run("noop", Outcome.failure())])
    summary = AuditSummary((_record("b", clean),), "run", "here", {})
    source = PageSource(
        "cleanroom audit T --mirror MIRROR --markdown",
        made_mirror_command="cleanroom osworld mirror T --made --to MIRROR",
        made_files=7,
    )
    page = audit_markdown(summary, source)
    top = page.split("-->")[0]
    assert top.index("osworld mirror T --made") < top.index("cleanroom audit T --mirror")
    assert "**made, not OSWorld's**" in page and "The mirror held 7 made files." in page


def test_a_page_over_fetched_files_says_nothing_of_made_ones() -> None:
    summary = AuditSummary((), "run", "here", {})
    assert "made, not OSWorld's" not in audit_markdown(summary, PageSource("cleanroom audit T"))


def test_a_stage_wrong_over_made_files_is_a_check_not_made_with_the_checkers_evidence() -> None:
    audit = judge_osworld(
        [run("t0", Outcome.success(**DETAILS)), run("noop", Outcome.failure())], made_files=True
    )
    assert audit.findings == () and audit.verdict == "could not audit"
    (gap,) = audit.unaudited
    assert gap.check == "t0" and gap.reason == MADE_FILES
    assert "over made files" in gap.detail and "metric[0] exact_match: 1.0" in gap.detail


def test_the_page_says_made_files_decided_a_stage_not_that_the_checker_is_wrong() -> None:
    audit = judge_osworld(
        [run("t0", Outcome.success()), run("noop", Outcome.failure())], made_files=True
    )
    page = audit_markdown(AuditSummary((_record("a", audit),), "run", "here", {}), "c")
    assert "| `a` | os | passes (made files) | fails | - | could not audit |" in page
    assert "could not audit: 1 (1 of them for a stage the made files decided)" in page


def test_a_tasks_files_are_made_here_when_the_mirrors_index_marks_them(tmp_path: Path) -> None:
    from cleanroom.verifiers.osworld.mirror import task_file_urls
    from cleanroom.verifiers.osworld.mirror_fill import fill_mirror

    task = load_task(EXAMPLES / "libreoffice_calc/035f41ba-6653-43ab-aa63-c86d449d62e5.json")
    assert not files_made_here(task, Mirror(str(tmp_path)))
    fill_mirror(task_file_urls(task), tmp_path, make=True)
    assert files_made_here(task, Mirror(str(tmp_path)))
    assert not files_made_here(task, None)


def test_a_flagged_task_makes_the_audit_exit_1() -> None:
    flagged = judge_osworld([run("t0", Outcome.success()), run("noop", Outcome.failure())])
    summary = AuditSummary((_record("a", flagged),), "run", "here", {})
    assert summary.exit_code == EXIT_FLAGGED


def _record(name: str, audit: TaskAudit) -> JobRecord:
    job = AuditJob(JobKind.OSWORLD_DESKTOP, f"/tasks/os/{name}.json")
    return JobRecord("done", 1, "env01", 0.0, 1.0, "", job, audit)


def test_not_run_reasons_come_from_coverage() -> None:
    vs_code = load_task(EXAMPLES / "vs_code/0512bb38-d531-4acf-9e7e-0add90816068.json")
    assert not_run_reason(vs_code, None).startswith("needs")
    assert "VS Code" in not_run_reason(vs_code, None)
    rename = load_task(EXAMPLES / "os/e0df059f-28a6-4169-924f-b9623e7184cc.json")
    assert not_run_reason(rename, None) == ""


def test_a_task_that_fetches_files_runs_only_with_a_mirror_that_holds_them(tmp_path: Path) -> None:
    writer = load_task(EXAMPLES / "libreoffice_writer/adf5e2c3-64c7-4644-b7b6-d2f0167927e7.json")
    assert "mirror" in not_run_reason(writer, None)
    mirror = Mirror.parse(str(tmp_path))
    assert "the mirror lacks libreoffice_writer/adf5e2c3" in not_run_reason(writer, mirror)
    folder = tmp_path / "libreoffice_writer" / writer.id
    folder.mkdir(parents=True)
    for name in ("Essay_Writing_English_for_uni.docx", "Essay_Writing_English_for_uni_Gold.docx"):
        (folder / name).write_bytes(b"x")
    assert not_run_reason(writer, mirror) == ""


def test_the_page_writes_a_pools_home_as_a_tilde_so_every_run_gives_the_same_page() -> None:
    from cleanroom.audit.osworld_table import _md

    text = "no file '/var/lib/cleanroom/pools/1f82d8/homes/env01/Desktop/a b.pdf' | x"
    assert _md(text) == "no file '~/Desktop/a b.pdf' \\| x"
    assert _md("/srv/pools/0a/homes/env02.b") == "~"
