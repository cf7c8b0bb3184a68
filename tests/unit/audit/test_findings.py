"""Judging a task from its runs: each planted problem raises its flag, and an invalid run
is a check that could not be made, never a flag."""

from __future__ import annotations

from cleanroom.audit.findings import (
    NO_ORACLE,
    CheckerRun,
    ContainerRuns,
    Flag,
    RunRecord,
    judge_container,
    judge_osworld,
    names_followed,
)
from cleanroom.core.outcomes import Outcome, Reason


def rec(label: str, outcome: Outcome, mode: str = "sealed") -> RunRecord:
    return RunRecord.of(label, mode, outcome)


OK = Outcome.success()
ZERO = Outcome.failure()
LOST = Outcome.invalid(Reason.VERIFIER_UNAVAILABLE, "the daemon went away")


def healthy(**changes: object) -> ContainerRuns:
    runs = ContainerRuns(
        noop=rec("no-op", ZERO),
        repeats=[rec(f"oracle #{n}", OK) for n in (1, 2, 3)],
        answers=rec("answers probe", ZERO),
        probes={"planted-reward-txt": (rec("p", ZERO, "shared"), rec("p", ZERO))},
    )
    for key, value in changes.items():
        setattr(runs, key, value)
    return runs


def test_a_sound_task_is_clean() -> None:
    audit = judge_container(healthy())
    assert audit.flags == [] and audit.verdict == "clean"


def test_a_task_whose_image_does_not_build_is_flagged_with_its_build_log() -> None:
    noop = rec("no-op", Outcome.invalid(Reason.ENVIRONMENT_ERROR, "x", build_log="step 2 failed"))
    audit = judge_container(ContainerRuns(noop=noop))
    assert audit.flags == [Flag.BUILD_FAILS]
    assert "step 2 failed" in audit.findings[0].evidence


def test_a_noop_that_passes_under_sealed_is_flagged() -> None:
    audit = judge_container(healthy(noop=rec("no-op", OK)))
    assert audit.flags == [Flag.PASSES_WITH_NO_WORK]


def test_an_oracle_that_never_passes_is_flagged() -> None:
    audit = judge_container(healthy(repeats=[rec(f"oracle #{n}", ZERO) for n in (1, 2, 3)]))
    assert audit.flags == [Flag.ORACLE_FAILS]


def test_oracle_runs_that_disagree_are_flaky_with_every_run_in_the_evidence() -> None:
    runs = [rec("oracle #1", OK), rec("oracle #2", ZERO), rec("oracle #3", OK)]
    audit = judge_container(healthy(repeats=runs))
    assert audit.flags == [Flag.FLAKY]
    assert len(audit.findings[0].runs) == 3


def test_without_an_oracle_the_noop_repeats_decide_flakiness() -> None:
    audit = judge_container(
        healthy(
            noop=rec("no-op", ZERO),
            repeats=[rec("no-op #2", Outcome.failure(0.5))],
            has_oracle=False,
        )
    )
    assert audit.flags == [Flag.FLAKY]
    assert audit.notes == (NO_ORACLE,)  # what could not be checked is said
    assert judge_container(healthy()).notes == ()


def test_answers_seen_by_the_probe_are_flagged_with_where_they_were() -> None:
    seen = [{"path": "/opt/ref/expected.txt", "matches": "tests/expected.txt"}]
    audit = judge_container(healthy(visible=seen))
    assert audit.flags == [Flag.ANSWERS_VISIBLE]
    assert "/opt/ref/expected.txt" in audit.findings[0].evidence


def test_a_probe_that_fools_shared_is_a_naive_flag_that_does_not_fail_the_audit() -> None:
    probes = {"planted-reward-txt": (rec("p", OK, "shared"), rec("p", ZERO))}
    audit = judge_container(healthy(probes=probes))
    assert audit.flags == [Flag.FORGEABLE_SHARED]
    assert not audit.fails_audit and audit.verdict == "clean"


def test_a_probe_that_fools_sealed_is_a_cleanroom_bug_that_fails_the_audit() -> None:
    probes = {"planted-reward-txt": (rec("p", OK, "shared"), rec("p", OK))}
    audit = judge_container(healthy(probes=probes))
    assert Flag.FORGEABLE_SEALED in audit.flags and audit.fails_audit


def test_an_invalid_noop_is_a_check_not_made_never_a_flag() -> None:
    audit = judge_container(healthy(noop=rec("no-op", LOST)))
    assert audit.flags == []
    assert audit.verdict == "could not audit"
    assert audit.unaudited[0].reason == "verifier_unavailable"


def test_invalid_oracle_runs_are_not_counted_as_disagreeing() -> None:
    runs = [rec("oracle #1", OK), rec("oracle #2", LOST), rec("oracle #3", OK)]
    audit = judge_container(healthy(repeats=runs))
    assert audit.flags == []
    assert [u.check for u in audit.unaudited] == ["flaky"]


def test_an_osworld_checker_accepting_a_near_miss_is_flagged() -> None:
    runs = [
        CheckerRun(rec("t0", ZERO), "failure"),
        CheckerRun(rec("oracle", OK), "success"),
        CheckerRun(rec("noop", ZERO), "failure"),
        CheckerRun(rec("near miss 1", OK), "failure", "copies instead of renaming"),
    ]
    audit = judge_osworld(runs)
    assert audit.flags == [Flag.NEAR_MISS_ACCEPTED]
    assert "copies instead of renaming" in audit.findings[0].evidence


def test_an_osworld_checker_that_cannot_run_is_not_audited_not_flagged() -> None:
    lost = Outcome.invalid(Reason.CHECKER_ERROR, "getter timed out")
    audit = judge_osworld([CheckerRun(rec("t0", lost), "failure")])
    assert audit.flags == [] and audit.unaudited[0].reason == "checker_error"


def test_a_task_audit_survives_its_json_round_trip() -> None:
    audit = judge_container(healthy(noop=rec("no-op", OK)))
    from cleanroom.audit.findings import TaskAudit

    assert TaskAudit.from_json(audit.to_json()) == audit


def test_tests_that_pass_when_the_code_succeeds_at_once_trust_the_agents_exit() -> None:
    audit = judge_container(healthy(succeed=rec("probe succeed-at-once", OK)))

    assert audit.flags == [Flag.TRUSTS_AGENT_EXIT]
    assert audit.verdict == "flagged"
    assert "succeed-at-once [sealed]: success" in audit.findings[0].runs[0]


def test_a_partial_score_of_the_code_probe_is_no_pass() -> None:
    audit = judge_container(healthy(succeed=rec("probe succeed-at-once", Outcome.failure(0.5))))

    assert audit.flags == []


def test_a_code_probe_the_runner_witness_saw_through_is_a_note_not_a_flag() -> None:
    caught = Outcome.agent_fault(Reason.RUNNER_CUT_SHORT, "pytest never finished its session")

    audit = judge_container(healthy(succeed=rec("probe succeed-at-once", caught)))

    assert audit.flags == []
    assert any("cut its tests short" in n for n in audit.notes)


def test_an_invalid_code_probe_is_a_check_not_made() -> None:
    audit = judge_container(healthy(succeed=rec("probe succeed-at-once", LOST)))

    assert audit.flags == [] and audit.verdict == "could not audit"
    assert audit.unaudited[0].check == "code-under-test probe"


def test_a_link_probe_that_fools_shared_is_the_naive_verifiers_exposure() -> None:
    probes = {"link-to-tests": (rec("probe link-to-tests", OK, "shared"), rec("l", ZERO))}

    audit = judge_container(healthy(probes=probes))

    assert audit.flags == [Flag.FORGEABLE_SHARED]
    assert audit.verdict == "clean"


def test_a_link_probe_that_fools_sealed_is_a_cleanroom_bug() -> None:
    probes = {"link-to-tests": (rec("l", OK, "shared"), rec("probe link-to-tests", OK))}

    audit = judge_container(healthy(probes=probes))

    assert Flag.FORGEABLE_SEALED in audit.flags and audit.verdict == "flagged"


def test_probes_with_nothing_to_replace_are_noted_with_their_runs() -> None:
    skipped = [(rec("probe link-to-tests", OK, "shared"), "not applicable: nothing to link")]

    audit = judge_container(healthy(skipped=skipped))

    assert audit.flags == []
    assert "probe link-to-tests: not applicable: nothing to link" in audit.notes
    assert skipped[0][0] in audit.runs


NAMES = "probe names-nowhere"


def test_names_that_move_the_tests_outcome_under_shared_are_the_naive_verifiers_exposure() -> None:
    names = (rec(NAMES, ZERO, "shared"), rec(NAMES, OK))

    audit = judge_container(healthy(names=names))

    assert audit.flags == [Flag.FORGEABLE_SHARED]
    assert audit.verdict == "clean"
    assert all(run in audit.runs for run in names)


def test_names_that_move_the_tests_outcome_under_sealed_are_a_cleanroom_bug() -> None:
    audit = judge_container(healthy(names=(rec(NAMES, ZERO, "shared"), rec(NAMES, ZERO))))

    assert Flag.FORGEABLE_SEALED in audit.flags and audit.verdict == "flagged"


def test_an_invalid_names_probe_under_sealed_is_a_check_not_made() -> None:
    audit = judge_container(healthy(names=(rec(NAMES, ZERO, "shared"), rec(NAMES, LOST))))

    assert Flag.FORGEABLE_SEALED not in audit.flags
    assert [u.check for u in audit.unaudited] == ["names probe under sealed"]


def test_names_are_followed_when_the_oracles_success_is_lost_or_never_ends() -> None:
    oracle = rec("oracle #1", OK)
    timeout = rec(NAMES, Outcome.invalid(Reason.VERIFIER_TIMEOUT, "over the limit"))

    assert names_followed(rec(NAMES, ZERO), oracle)
    assert names_followed(timeout, oracle)
    assert not names_followed(rec(NAMES, OK), oracle)
    # Nothing to compare with when the oracle itself failed.
    assert not names_followed(rec(NAMES, ZERO), rec("oracle #1", ZERO))
