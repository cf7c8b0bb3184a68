"""The exceptions cleanroom raises to its library users, under one root.

Catching `CleanroomError` catches every error of cleanroom's own making: a task folder
that cannot be used, a budget too short for a verification, a run its runtime cannot do,
an outcome that must not be scored, an integration whose extra is not installed. A
verification itself never raises for what it finds: what went wrong is an `Outcome` with
a reason. These exceptions are for the callers who need one (a harness that records no
reward when it catches one).
"""

from __future__ import annotations

from cleanroom.core.outcomes import Outcome, Reason, Status


class CleanroomError(Exception):
    """The root of every exception cleanroom raises on purpose."""


class InvalidOutcomeError(CleanroomError):
    """An outcome that must not be scored (the infrastructure failed): raised so that
    a harness records no reward, never a 0. Carries the outcome."""

    def __init__(self, outcome: Outcome) -> None:
        if outcome.status is not Status.INVALID or outcome.reason is None:
            raise ValueError("only an invalid outcome is raised")
        self.outcome = outcome
        super().__init__(f"cleanroom: invalid ({outcome.reason.value}): {outcome.detail}")


class VerifierUnavailableError(InvalidOutcomeError):
    """An invalid outcome because the container daemon (or Harbor's environment) did not
    answer: the one kind of invalid that a second try may not meet. Harbor decides by the
    exception's class name whether to retry (`override_error_policy`), so it has a name
    of its own."""


def invalid_outcome_error(outcome: Outcome) -> InvalidOutcomeError:
    """The exception ``outcome`` (invalid) is raised as."""
    if outcome.reason is Reason.VERIFIER_UNAVAILABLE:
        return VerifierUnavailableError(outcome)
    return InvalidOutcomeError(outcome)


class BudgetTooShortError(CleanroomError):
    """The caller would stop the verifier before cleanroom's own limits can act: an agent
    could then make its run end in the caller's timeout, with no reward, instead of its 0.
    Refused before the agent's container is looked at. ``needed_s`` is the least time
    that would do."""

    def __init__(self, message: str, *, allowed_s: float, needed_s: float) -> None:
        self.allowed_s = allowed_s
        self.needed_s = needed_s
        super().__init__(message)


class UnsupportedByRuntimeError(CleanroomError):
    """A run that needs what its verification runtime cannot do (compose services, a
    verifier in the agent's network namespace...), refused before anything starts rather
    than failing halfway: another try on the same runtime meets the same refusal.
    ``runtime`` names the runtime; ``missing`` names each capability it lacks, as its
    capabilities record (`runtime.capabilities.RuntimeCapabilities`) calls it."""

    def __init__(self, message: str, *, runtime: str, missing: tuple[str, ...]) -> None:
        self.runtime = runtime
        self.missing = missing
        super().__init__(message)


class ExtraNotInstalledError(CleanroomError, ImportError):
    """An integration was asked for whose library is not installed: names the extra
    (``pip install 'cleanroom[trl]'``) that brings it."""

    def __init__(self, feature: str, extra: str, missing: str) -> None:
        self.extra = extra
        self.missing = missing
        super().__init__(
            f"{feature} needs {missing}, which is not installed: pip install 'cleanroom[{extra}]'",
            name=missing,
        )
