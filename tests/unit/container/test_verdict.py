"""One place decides: every observation ends in an explicit outcome, in the order of trust."""

from __future__ import annotations

from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.reward import FileKind, RewardFile
from cleanroom.verifiers.container.tamper import Change, ChangeKind, classify
from cleanroom.verifiers.container.verdict import Evidence, decide

TXT = "/logs/verifier/reward.txt"
JSON = "/logs/verifier/reward.json"


def ran(text: bytes | None, exit_code: int = 0, mode: Mode = Mode.SEALED) -> Evidence:
    """Evidence of a verifier that ran to the end and left ``text`` (None: no file)."""
    found = (
        RewardFile.missing(TXT)
        if text is None
        else RewardFile(TXT, FileKind.REGULAR, text, len(text))
    )
    return Evidence(
        mode, test_exit_code=exit_code, json_file=RewardFile.missing(JSON), text_file=found
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


def test_a_junk_reward_is_invalid_with_the_offending_bytes() -> None:
    outcome = decide(ran(b"inf\n"))

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.BAD_REWARD)
    assert outcome.details["reward_bytes"] == "inf\\n"


def test_tamper_beats_a_perfect_reward() -> None:
    ev = ran(b"1")
    ev.tamper = classify([Change("/usr/local/bin/pytest", ChangeKind.ADDED)])

    outcome = decide(ev)

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.TAMPER)
    assert outcome.details["tamper"] == ["A /usr/local/bin/pytest"]


def test_a_clean_diff_is_recorded_and_does_not_change_the_score() -> None:
    ev = ran(b"1")
    ev.tamper = classify([Change("/app/stats.py", ChangeKind.MODIFIED)])

    outcome = decide(ev)

    assert outcome.status is Status.SUCCESS
    assert outcome.details["tamper"] == []


def test_a_verifier_that_could_not_run_is_unavailable_never_zero() -> None:
    ev = Evidence(Mode.SEALED, unavailable="starting a verifier container: no space left")

    outcome = decide(ev)

    assert (outcome.status, outcome.reason, outcome.score) == (
        Status.INVALID,
        Reason.VERIFIER_UNAVAILABLE,
        None,
    )


def test_a_reward_that_could_not_be_cleared_fails_loudly() -> None:
    ev = ran(b"1", mode=Mode.CLEARED)
    ev.clear_failure = "rm exited 1: Is a directory"

    outcome = decide(ev)

    assert outcome.reason is Reason.VERIFIER_UNAVAILABLE
    assert "could not be cleared" in outcome.detail


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
