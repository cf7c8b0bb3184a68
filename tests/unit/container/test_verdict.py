"""One place decides: every observation ends in an explicit outcome, in the order of trust."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from cleanroom.core.observed_file import FileKind, ObservedFile
from cleanroom.core.outcomes import Cause, Outcome, Reason, Status
from cleanroom.verifiers.container.decision.config_findings import ConfigKind, ToolConfig
from cleanroom.verifiers.container.decision.tamper import Change, ChangeKind, TamperReport, classify
from cleanroom.verifiers.container.decision.verdict import (
    AgentFault,
    Evidence,
    Verified,
    VerifierFacts,
    blame_state,
    control_delay,
    decide,
    judge,
    needs_pristine_control,
)
from cleanroom.verifiers.container.decision.witness import RunnerRun, WitnessReport
from cleanroom.verifiers.container.modes import Mode

PLACES = ("/tests", "/logs/verifier")

TXT = "/logs/verifier/reward.txt"
JSON = "/logs/verifier/reward.json"


def ran(text: bytes | None, exit_code: int = 0, mode: Mode = Mode.SEALED) -> Evidence:
    """Evidence of a verifier that ran to the end and left ``text`` (None: no file)."""
    found = (
        ObservedFile.missing(TXT)
        if text is None
        else ObservedFile(TXT, FileKind.REGULAR, text, len(text))
    )
    return Evidence(
        mode, test_exit_code=exit_code, json_file=ObservedFile.missing(JSON), text_file=found
    )


def test_a_reward_of_one_is_success_with_its_source() -> None:
    outcome = decide(ran(b"1\n"))

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)
    assert outcome.details["reward_source"] == TXT
    assert outcome.details["mode"] == "sealed"


def test_a_missing_reward_is_a_valid_zero() -> None:
    outcome = decide(ran(None, exit_code=1))

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)
    assert outcome.details["reward_source"] == "missing"


def test_a_partial_reward_with_a_failing_exit_is_graded_by_the_reward() -> None:
    outcome = decide(ran(b"0.6667\n", exit_code=1))

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.6667)
    assert outcome.details["test_exit_code"] == 1


def test_a_perfect_reward_with_a_failing_exit_is_still_graded_by_the_reward() -> None:
    assert decide(ran(b"1", exit_code=1)).status is Status.SUCCESS


def ran_json(data: bytes) -> Evidence:
    found = ObservedFile(JSON, FileKind.REGULAR, data, len(data))
    return Evidence(
        Mode.SEALED, test_exit_code=0, json_file=found, text_file=ObservedFile.missing(TXT)
    )


def test_every_metric_of_a_reward_json_is_in_the_details() -> None:
    outcome = decide(ran_json(b'{"reward": 0.5, "passed": 3}'))

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.5)
    assert outcome.details["reward_metrics"] == {"reward": 0.5, "passed": 3.0}
    assert "reward_note" not in outcome.details


def test_metrics_with_no_single_reward_are_a_valid_zero_that_says_why() -> None:
    outcome = decide(ran_json(b'{"accuracy": 1, "f1": 1}'))

    assert (outcome.status, outcome.score, outcome.reason) == (Status.FAILURE, 0.0, None)
    assert outcome.details["reward_metrics"] == {"accuracy": 1.0, "f1": 1.0}
    assert "no single reward" in outcome.details["reward_note"]


def test_a_junk_reward_is_invalid_with_the_offending_bytes() -> None:
    outcome = decide(ran(b"inf\n"))

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.BAD_REWARD)
    assert outcome.details["reward_bytes"] == "inf\\n"


def test_tamper_beats_a_perfect_reward_and_scores_zero() -> None:
    ev = ran(b"1")
    ev.tamper = classify(
        [Change("/tests/conftest.py", ChangeKind.ADDED)],
        verifier_places=PLACES,
        state_paths=["/app"],
    )

    outcome = decide(ev)

    assert (outcome.status, outcome.score, outcome.reason) == (Status.FAILURE, 0.0, Reason.TAMPER)
    assert outcome.details["tamper"] == ["A /tests/conftest.py"]


def test_changes_outside_the_state_are_listed_as_unseen_and_do_not_change_the_score() -> None:
    ev = ran(b"1")
    ev.tamper = classify(
        [
            Change("/app/stats.py", ChangeKind.MODIFIED),
            Change("/usr/local/bin/pytest", ChangeKind.ADDED),
        ],
        verifier_places=PLACES,
        state_paths=["/app"],
    )

    outcome = decide(ev)

    assert outcome.status is Status.SUCCESS
    assert outcome.details["tamper"] == []
    assert outcome.details["unseen_by_verifier"] == {
        "count": 1,
        "first": ["A /usr/local/bin/pytest"],
    }


def test_a_verifier_that_could_not_run_is_unavailable_never_zero() -> None:
    ev = Evidence(Mode.SEALED, unavailable="starting a verifier container: no space left")

    outcome = decide(ev)

    assert (outcome.status, outcome.reason, outcome.score) == (
        Status.INVALID,
        Reason.VERIFIER_UNAVAILABLE,
        None,
    )


def test_a_reward_the_agent_made_unclearable_is_its_zero_not_an_exclusion() -> None:
    ev = ran(b"1", mode=Mode.CLEARED)
    ev.agent_fault = AgentFault(Reason.TAMPER, "the reward could not be cleared: Is a directory")

    outcome = decide(ev)

    assert (outcome.status, outcome.score, outcome.reason) == (Status.FAILURE, 0.0, Reason.TAMPER)
    assert outcome.caused_by is Cause.AGENT
    assert outcome.exit_code == 3


def test_configuration_a_verifiers_tool_would_obey_is_tamper_that_says_so() -> None:
    ev = ran(b"1")
    found = ToolConfig("/app/.git/config", ConfigKind.GIT_SETTING, "core.fsmonitor", "runs")
    ev.tamper = TamperReport((), (), config=(found,))

    outcome = decide(ev)

    assert (outcome.status, outcome.score, outcome.reason) == (Status.FAILURE, 0.0, Reason.TAMPER)
    assert "configuration that a tool of the verifier's would obey" in outcome.detail
    assert outcome.details["tamper"] == [
        "config /app/.git/config: core.fsmonitor (git setting: runs)"
    ]


def test_proof_of_tampering_stands_even_when_the_daemon_fails_afterwards() -> None:
    ev = Evidence(Mode.SEALED, unavailable="the daemon went away")
    ev.tamper = TamperReport((), ("/logs/verifier/reward.txt",))

    outcome = decide(ev)

    assert (outcome.status, outcome.reason) == (Status.FAILURE, Reason.TAMPER)


def test_a_bug_of_cleanrooms_own_is_invalid_with_its_traceback() -> None:
    ev = ran(b"1")
    ev.harness_error = "Traceback ...\nZeroDivisionError"

    outcome = decide(ev)

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.HARNESS_ERROR)
    assert outcome.caused_by is Cause.INFRASTRUCTURE
    assert "ZeroDivisionError" in outcome.details["traceback"]


def test_a_failed_setup_command_is_an_environment_error() -> None:
    ev = Evidence(Mode.CLEARED, setup_failure="verifier setup command 1 exited 1")

    assert decide(ev).reason is Reason.ENVIRONMENT_ERROR


def test_a_verifier_over_its_time_is_a_timeout_even_with_a_reward() -> None:
    ev = ran(b"1")
    ev.timed_out = "test.sh was still running at the verifier's 5 s limit"

    assert decide(ev).reason is Reason.VERIFIER_TIMEOUT


def test_an_image_that_did_not_build_is_an_environment_error_with_its_log() -> None:
    ev = Evidence(Mode.SEALED, environment_error="did not build", build_log="E: no such package")

    outcome = decide(ev)

    assert outcome.reason is Reason.ENVIRONMENT_ERROR
    assert outcome.details["build_log"] == "E: no such package"


def test_a_run_that_never_looked_at_the_reward_is_not_a_zero() -> None:
    outcome = decide(Evidence(Mode.SHARED, test_exit_code=0))

    assert outcome.reason is Reason.VERIFIER_UNAVAILABLE


# The pristine control: a verifier failure the agent's state may have caused ------------

LIMIT_S = 60.0


def failed_after_running(reason: Reason, **details: object) -> Verified:
    """A verifier failure after the verification ran to its end."""
    outcome = Outcome.invalid(reason, "test.sh was still running", **details)
    return Verified(outcome, VerifierFacts(finished=True, setup_s=0.5, test_s=60.0))


def pristine(status: Status, setup_and_test_s: float, reason: Reason | None = None) -> Verified:
    facts = VerifierFacts(finished=True, test_s=setup_and_test_s)
    if status is Status.INVALID:
        outcome = Outcome.invalid(reason or Reason.VERIFIER_TIMEOUT, "again")
    else:
        outcome = Outcome(status, 1.0 if status is Status.SUCCESS else 0.0, None, "", {})
    return Verified(outcome, facts)


@pytest.mark.parametrize(
    "reason", [Reason.VERIFIER_TIMEOUT, Reason.BAD_REWARD, Reason.ENVIRONMENT_ERROR]
)
def test_a_verifier_failure_that_a_clean_pristine_run_disowns_is_the_agents_zero(
    reason: Reason,
) -> None:
    verified = failed_after_running(reason)
    assert needs_pristine_control(verified)

    judged = blame_state(verified, pristine(Status.FAILURE, 0.4), LIMIT_S).outcome

    assert (judged.status, judged.score, judged.reason) == (
        Status.FAILURE,
        0.0,
        Reason.BROKE_VERIFIER,
    )
    assert judged.caused_by is Cause.AGENT
    assert judged.details["pristine_control"]["status"] == "failure"
    assert "what the agent left broke it" in judged.detail


def test_a_verifier_that_fails_on_the_pristine_state_too_stays_invalid() -> None:
    verified = failed_after_running(Reason.VERIFIER_TIMEOUT)

    judged = blame_state(verified, pristine(Status.INVALID, 60.0), LIMIT_S).outcome

    assert (judged.status, judged.reason) == (Status.INVALID, Reason.VERIFIER_TIMEOUT)
    assert judged.details["pristine_control"]["reason"] == "verifier_timeout"


def test_a_pristine_run_that_ends_within_the_limit_shows_the_verifier_sound() -> None:
    # However near the limit: the machine ran this verifier within it just now.
    judged = blame_state(
        failed_after_running(Reason.VERIFIER_TIMEOUT), pristine(Status.SUCCESS, 59.0), LIMIT_S
    ).outcome

    assert (judged.status, judged.reason) == (Status.FAILURE, Reason.BROKE_VERIFIER)


def test_a_pristine_run_past_the_limit_proves_nothing_without_the_solution_s_run() -> None:
    late = pristine(Status.SUCCESS, 61.0)
    judged = blame_state(failed_after_running(Reason.VERIFIER_TIMEOUT), late, LIMIT_S).outcome

    assert (judged.status, judged.reason) == (Status.INVALID, Reason.VERIFIER_TIMEOUT)


def test_when_the_pristine_state_overruns_too_the_solution_s_run_decides() -> None:
    # The tests wait for what the agent was to make: the untouched state overruns, and
    # the solution's state shows the limit is sufficient.
    overran = failed_after_running(Reason.VERIFIER_TIMEOUT)
    control = pristine(Status.INVALID, 60.0)

    judged = blame_state(overran, control, LIMIT_S, pristine(Status.SUCCESS, 2.0)).outcome
    assert (judged.status, judged.reason) == (Status.FAILURE, Reason.BROKE_VERIFIER)
    assert judged.details["oracle_control"]["status"] == "success"
    assert "solution's state" in judged.detail

    broken = blame_state(overran, control, LIMIT_S, pristine(Status.INVALID, 60.0)).outcome
    assert (broken.status, broken.reason) == (Status.INVALID, Reason.VERIFIER_TIMEOUT)


def test_only_suspect_failures_of_a_verifier_that_ran_get_a_pristine_control() -> None:
    never_ran = Verified(
        Outcome.invalid(Reason.ENVIRONMENT_ERROR, "the image did not build"), VerifierFacts()
    )
    daemon_down = failed_after_running(Reason.VERIFIER_UNAVAILABLE)
    zero = Verified(Outcome.failure(0.0), VerifierFacts(finished=True))

    assert not needs_pristine_control(never_ran)
    assert not needs_pristine_control(daemon_down)
    assert not needs_pristine_control(zero)


def test_the_decisions_read_the_facts_never_the_details() -> None:
    # Details are evidence for people: timings named there change nothing.
    shown = {"timings": {"verify_s": 9.0, "setup_s": 0.0, "test_s": 0.1}}
    never_ran = Verified(Outcome.invalid(Reason.VERIFIER_TIMEOUT, "x", **shown), VerifierFacts())
    assert not needs_pristine_control(never_ran)

    slow = Verified(Outcome.failure(0.0, **shown), VerifierFacts(finished=True, test_s=61.0))
    judged = blame_state(failed_after_running(Reason.VERIFIER_TIMEOUT), slow, LIMIT_S).outcome
    assert judged.reason is Reason.VERIFIER_TIMEOUT  # 61 s of a 60 s limit proves nothing


def test_the_pristine_control_names_the_image_it_ran_on() -> None:
    control = pristine(Status.FAILURE, 0.4)
    control.outcome.details["image"] = "sha256:pristine"
    judged = blame_state(failed_after_running(Reason.VERIFIER_TIMEOUT), control, LIMIT_S)
    assert judged.outcome.details["pristine_control"]["image"] == "sha256:pristine"


def test_the_facts_carry_the_verifiers_times_and_the_reward_metrics() -> None:
    ev = ran(b'{"reward": 1.0, "speed": 0.5}')
    ev.json_file = ObservedFile(JSON, FileKind.REGULAR, b'{"reward": 1.0, "speed": 0.5}', 30)
    ev.finished, ev.setup_s, ev.test_s, ev.step = True, 0.25, 1.5, "second"

    facts = judge(ev).facts

    assert facts == VerifierFacts(True, 0.25, 1.5, {"reward": 1.0, "speed": 0.5}, "second")


def cut_short() -> WitnessReport:
    return WitnessReport((RunnerRun(pid=9, session_started=True, collected=4),))


@pytest.mark.parametrize("reward", [b"1", b"0.25"])
def test_a_reward_the_runner_witness_contradicts_is_the_agents_zero(reward: bytes) -> None:
    ev = ran(reward)
    ev.witness = cut_short()

    outcome = decide(ev)

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)
    assert outcome.reason is Reason.RUNNER_CUT_SHORT
    assert outcome.caused_by is Cause.AGENT
    assert "never finished" in outcome.detail
    assert outcome.details["runner_witness"]["runs"][0]["pid"] == 9


def test_a_zero_reward_stays_a_plain_failure_whatever_the_witness_saw() -> None:
    ev = ran(None, exit_code=1)
    ev.witness = cut_short()

    outcome = decide(ev)

    assert (outcome.status, outcome.reason) == (Status.FAILURE, None)


def test_a_witness_that_saw_runs_end_normally_changes_nothing() -> None:
    ev = ran(b"1")
    ev.witness = WitnessReport(
        (RunnerRun(pid=9, session_started=True, finished=True, exit_status=0, exited=True),)
    )

    assert decide(ev).status is Status.SUCCESS


def test_a_reward_written_after_test_sh_ended_is_found_and_one_before_is_not(
    tmp_path: Path,
) -> None:
    from cleanroom.verifiers.container.run.sealed import written_after

    ended = time.time_ns()
    (tmp_path / "reward.txt").write_text("1")
    os.utime(tmp_path / "reward.txt", ns=(ended + 10**9, ended + 10**9))  # a second later
    (tmp_path / "reward.json").write_text("{}")
    os.utime(tmp_path / "reward.json", ns=(ended - 10**9, ended - 10**9))

    late = written_after(tmp_path, [TXT, JSON], ended)

    assert late == (f"{TXT} (written 1.000 s after test.sh ended)",)
    assert written_after(tmp_path / "gone", [TXT], ended) == ()


def test_with_no_known_control_a_fresh_one_starts_at_once() -> None:
    assert control_delay(None, 55.0) == 0.0


def test_a_quick_known_control_lets_a_quick_verification_end_without_one() -> None:
    # fix-median's control takes 0.4 s: a verification gets 1.2 s before one starts, and
    # the late control still has 53.8 s, far more than twice what the task needs.
    assert control_delay(pristine(Status.FAILURE, 0.4), 55.0) == pytest.approx(1.2)
    assert control_delay(pristine(Status.FAILURE, 0.1), 55.0) == 1.0  # never under 1 s


def test_the_delay_counts_the_known_controls_whole_verification() -> None:
    # On the generic path the tests take 0.4 s of a 6 s verification: the verification
    # being judged is as long, so it gets three times the whole.
    known = pristine(Status.FAILURE, 0.4)
    whole = Verified(known.outcome, replace(known.facts, verify_s=6.0))

    assert control_delay(whole, 55.0) == pytest.approx(18.0)


def test_a_known_control_too_slow_for_a_late_start_means_a_fresh_one_at_once() -> None:
    # A check that takes 5 s of an 8 s limit: 15 s of waiting would leave it no room.
    assert control_delay(pristine(Status.FAILURE, 5.0), 8.0) == 0.0
    # A known control that showed nothing (it overran) is no measure either.
    assert control_delay(pristine(Status.INVALID, 8.0), 8.0) == 0.0
