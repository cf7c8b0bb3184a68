"""Where verification runs: the interface (`interface.VerificationRuntime`), the records
every implementation hands back (`records`), and the Docker implementation (`docker`)."""

from cleanroom.verifiers.container.runtime.interface import VerificationRuntime
from cleanroom.verifiers.container.runtime.records import (
    Limits,
    RuntimeUnavailable,
    ServiceState,
    StartedContainer,
    StateCopy,
    StateTooLarge,
)

__all__ = [
    "Limits",
    "RuntimeUnavailable",
    "ServiceState",
    "StartedContainer",
    "StateCopy",
    "StateTooLarge",
    "VerificationRuntime",
]
