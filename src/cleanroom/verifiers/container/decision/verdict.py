"""The one place that turns what a verification run observed into an `Outcome`.

Every path ends in an explicit outcome. A fault of the harness, of Docker or of the
task's own verifier is `invalid` with the reason that names it, never a silent 0; what
the agent did (tampering with the verifier's places, breaking its work dir) is a failure
scored 0 with its reason, never an exclusion. The order of the checks is the order of
trust: an image that never built (nothing ran), then the agent's own acts (proof of them
stands whatever fails later, so an agent cannot hide behind a fault it provoked), then a
verifier that could not run or be prepared, then one that ran out of time, and only then
the reward, which is parsed with Harbor's meaning and checked. A missing reward is a valid
0 (a test script that writes the reward only on success is the common case), and so is a
``reward.json`` of several metrics with no single reward; a partial reward with a non-zero
exit is graded by that reward. A reward above 0 that the runner witness contradicts (a
pytest process cut short) is the agent's 0 (`Reason.RUNNER_CUT_SHORT`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from cleanroom.core.observed_file import ObservedFile
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.verifiers.container.decision.name_files import NameFileChange
from cleanroom.verifiers.container.decision.reward import BadReward, parse_reward
from cleanroom.verifiers.container.decision.tamper import TamperReport
from cleanroom.verifiers.container.decision.witness import WitnessReport
from cleanroom.verifiers.container.modes import Mode


@dataclass(frozen=True)
class AgentFault:
    """Something the agent did that makes its rollout a 0 whatever test.sh would say."""

    reason: Reason
    detail: str


@dataclass(frozen=True)
class VerifierFacts:
    """What the decisions after the verdict read of a verification, typed: whether the
    verification ran to its end (an image that never built, or a daemon that stopped
    answering, never reached it), how long the verifier's setup commands and test.sh
    took, the reward's metrics (None when no reward was read), the step of a
    multi-step task whose verification this is (or that ended the rollout), and how
    long the whole verification took (from stopping the agent to the reward read)."""

    finished: bool = False
    setup_s: float = 0.0
    test_s: float = 0.0
    reward_metrics: dict[str, float] | None = None
    step: str | None = None
    verify_s: float = 0.0

    @property
    def setup_and_test_s(self) -> float:
        return self.setup_s + self.test_s


@dataclass(frozen=True)
class Verified:
    """A verification's outcome, and the facts later decisions read of it."""

    outcome: Outcome
    facts: VerifierFacts


@dataclass
class Evidence:
    """What one verification run saw, filled in step by step by the orchestrator.

    ``details`` is evidence for people; no decision reads it. ``timings`` are shown
    there too. What decisions read is typed: ``finished``, ``setup_s``, ``test_s``,
    ``step``, and the rest of the fields."""

    mode: Mode
    environment_error: str | None = None
    build_log: str | None = None
    unavailable: str | None = None
    harness_error: str | None = None
    agent_fault: AgentFault | None = None
    setup_failure: str | None = None
    tamper: TamperReport | None = None
    timed_out: str | None = None
    test_exit_code: int | None = None
    json_file: ObservedFile | None = None
    text_file: ObservedFile | None = None
    # What the runner witness saw of test.sh's pytest runs (sealed only).
    witness: WitnessReport | None = None
    # Whether the verification ran to its end, and how long its setup and test.sh took,
    # and the whole verification.
    finished: bool = False
    setup_s: float = 0.0
    test_s: float = 0.0
    verify_s: float = 0.0
    # The step of a multi-step task this verification is of.
    step: str | None = None
    # What the agent changed of the name files (/etc/hosts, ...) the harness made for its
    # container: evidence for people (a live verifier gets the harness's copies).
    name_files_changed: tuple[NameFileChange, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


def decide(ev: Evidence) -> Outcome:
    """The outcome of a verification run; the only function that makes one."""
    return judge(ev).outcome


def judge(ev: Evidence) -> Verified:
    """The outcome of a verification run, with the facts later decisions read."""
    outcome, metrics = _outcome(ev)
    facts = VerifierFacts(ev.finished, ev.setup_s, ev.test_s, metrics, ev.step, ev.verify_s)
    return Verified(outcome, facts)


def _outcome(ev: Evidence) -> tuple[Outcome, dict[str, float] | None]:
    """The outcome, and the reward's metrics when a reward was read."""
    details: dict[str, Any] = {**ev.details, "mode": ev.mode.value}
    if ev.timings:
        details["timings"] = {k: round(v, 4) for k, v in ev.timings.items()}
    if ev.name_files_changed:
        details["name_files_changed"] = [str(c) for c in ev.name_files_changed]
    if ev.tamper is not None:
        details["tamper"] = ev.tamper.paths
        details["unseen_by_verifier"] = {
            "count": len(ev.tamper.unseen),
            "first": ev.tamper.unseen_shown,
        }
    if ev.environment_error is not None:
        if ev.build_log:
            details["build_log"] = ev.build_log
        return Outcome.invalid(Reason.ENVIRONMENT_ERROR, ev.environment_error, **details), None
    if ev.tamper is not None and ev.tamper.tampered:
        n = len(ev.tamper.paths)
        why = (
            f"the agent wrote into, linked to or (from its code, while the tests ran) "
            f"touched the verifier's own places (tests, reward) {n} time(s)"
        )
        if ev.tamper.config:
            why = (
                f"the agent left configuration that a tool of the verifier's would obey "
                f"(a git filter, hook or driver, a start-up or rc file), {n} time(s) in all"
            )
            if len(ev.tamper.config) < n:
                why += ", and wrote into or linked to the verifier's own places"
        return Outcome.agent_fault(Reason.TAMPER, why, **details), None
    if ev.agent_fault is not None:
        return Outcome.agent_fault(ev.agent_fault.reason, ev.agent_fault.detail, **details), None
    if ev.harness_error is not None:
        details["traceback"] = ev.harness_error
        why = "cleanroom itself failed while verifying (a bug; the traceback is in details)"
        return Outcome.invalid(Reason.HARNESS_ERROR, why, **details), None
    if ev.unavailable is not None:
        return Outcome.invalid(Reason.VERIFIER_UNAVAILABLE, ev.unavailable, **details), None
    if ev.setup_failure is not None:
        return Outcome.invalid(Reason.ENVIRONMENT_ERROR, ev.setup_failure, **details), None
    if ev.timed_out is not None:
        return Outcome.invalid(Reason.VERIFIER_TIMEOUT, ev.timed_out, **details), None
    details["test_exit_code"] = ev.test_exit_code
    if ev.witness is not None:
        details["runner_witness"] = ev.witness.summary()
    if ev.json_file is None or ev.text_file is None:
        return Outcome.invalid(
            Reason.VERIFIER_UNAVAILABLE, "the reward files were never looked at", **details
        ), None
    try:
        reward = parse_reward(ev.json_file, ev.text_file)
    except BadReward as bad:
        details.update(reward_source=bad.source, reward_bytes=bad.shown)
        return Outcome.invalid(Reason.BAD_REWARD, str(bad), **details), None
    if reward is None:
        details["reward_source"] = "missing"
        return Outcome.failure(0.0, **details), None
    details["reward_source"] = reward.source
    details["reward_metrics"] = reward.metrics
    if reward.metric is None:
        details["reward_note"] = (
            f'{len(reward.metrics)} metric(s) and no single reward (no "reward" key, '
            f"not one metric alone): scored 0, as Harbor records no reward for it"
        )
    contradiction = ev.witness.contradiction if ev.witness is not None else None
    if reward.score > 0 and contradiction is not None:
        why = f"test.sh claimed a reward of {reward.score:g}, but {contradiction}"
        return Outcome.agent_fault(Reason.RUNNER_CUT_SHORT, why, **details), reward.metrics
    scored = Outcome.from_score(reward.score, **details)
    return replace(scored, reward_metrics=dict(reward.metrics)), reward.metrics


# What a verifier that ran on the agent's state can end in although the infrastructure is
# sound, because of that state: a FIFO where the test reads, a module under test that
# never returns, junk a setup command chokes on. Each is `invalid` only if the same
# verifier fails the same way on the pristine state.
STATE_SUSPECT_REASONS = frozenset(
    {Reason.VERIFIER_TIMEOUT, Reason.BAD_REWARD, Reason.ENVIRONMENT_ERROR}
)


def needs_pristine_control(verified: Verified) -> bool:
    """Whether the outcome is a verifier failure the agent's state may have caused: the
    verification ran to its end (an image that never built never reached it) and ended
    in a suspect reason."""
    return verified.facts.finished and verified.outcome.reason in STATE_SUSPECT_REASONS


def sound(control: Verified, limit_s: float) -> bool:
    """Whether a control run shows the verifier and the machine sound: it ran to a valid
    outcome (any score) with its setup and tests within the verifier's limit."""
    return control.outcome.status is not Status.INVALID and (
        control.facts.setup_and_test_s <= limit_s
    )


# A fresh control started late still gets at least this many times what the known one
# took, and the verification this many times that before a control starts at all.
CONTROL_MARGIN = 2.0
LATE_CONTROL_AFTER = 3.0
MIN_CONTROL_DELAY_S = 1.0


def control_delay(known: Verified | None, limit_s: float) -> float:
    """How long a verification may run before a fresh pristine control starts beside it,
    given the control this task and image already gave (``known``; None: none yet).

    A control shows the machine sound *now*, so one that answers for an overrun must run
    beside the verification, not be remembered. But a verification that ends in the
    time a sound control took needs no control at all: the fresh one starts only once
    the verification has run `LATE_CONTROL_AFTER` times as long as the known one's whole
    verification
    (at least `MIN_CONTROL_DELAY_S`), and only when it still has `CONTROL_MARGIN` times
    that within the limit; otherwise (no known control, or too slow a one) at once. A
    late control has less time than the limit, so it can only show a sound machine less
    often, never more."""
    if known is None or not sound(known, limit_s):
        return 0.0
    took = max(known.facts.verify_s, known.facts.setup_and_test_s)
    delay = max(MIN_CONTROL_DELAY_S, LATE_CONTROL_AFTER * took)
    return delay if delay + CONTROL_MARGIN * took <= limit_s else 0.0


def blame_state(
    verified: Verified, control: Verified, limit_s: float, oracle: Verified | None = None
) -> Verified:
    """``verified``, judged against the same verifier run on a known state: the rule that
    tells the agent's failure from the infrastructure's, stated once.

    A verifier failure the agent's state may have caused (`needs_pristine_control`: an
    overrun, a junk reward, a failed setup command) is the agent's 0
    (`Reason.BROKE_VERIFIER`) when a control shows the verifier and the machine sound
    (`sound`: valid, within the limit, whatever its time within it):

    - ``control``: the same verifier on the pristine state, as a no-op leaves it;
    - ``oracle``: the same verifier on the state the task's own solution leaves, run when
      the pristine control is not sound. A task whose untouched state makes the tests
      overrun (they wait for what the agent was to make) shows its limit is sufficient
      this way: the oracle's own run decides.

    Otherwise the verifier fails without the agent as well, and ``verified`` stands
    (`invalid`). Either way the controls' results are in the details.
    """
    outcome = verified.outcome
    details = {**outcome.details, "pristine_control": _summary(control)}
    if oracle is not None:
        details["oracle_control"] = _summary(oracle)
    proof = next(
        (
            (what, c)
            for what, c in (("pristine", control), ("solution's", oracle))
            if c is not None and sound(c, limit_s)
        ),
        None,
    )
    if proof is None:
        return replace(verified, outcome=replace(outcome, details=details))
    what, by = proof
    why = (
        f"{outcome.detail} on the agent's state; on the {what} state the same verifier "
        f"ran cleanly in {by.facts.setup_and_test_s:.1f} s of its {limit_s:g} s "
        f"({by.outcome.status.value}), so what the agent left broke it"
    )
    return replace(verified, outcome=Outcome.agent_fault(Reason.BROKE_VERIFIER, why, **details))


def _summary(control: Verified) -> dict[str, Any]:
    return {
        "status": control.outcome.status.value,
        "reason": control.outcome.reason.value if control.outcome.reason else None,
        "score": control.outcome.score,
        "setup_and_test_s": round(control.facts.setup_and_test_s, 3),
        "image": control.outcome.details.get("image"),
    }
