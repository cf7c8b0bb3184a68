"""Where verification runs: the interface (`interface.VerificationRuntime`), the records
every implementation hands back (`records`), and its implementations: `docker` (a Docker
or podman daemon this machine reaches, the fast path) and `harbor` (Harbor's own
environments, the generic path; needs ``cleanroom[harbor]`` and is imported only by
those who ask for it)."""

from cleanroom.verifiers.container.runtime.capabilities import RuntimeCapabilities
from cleanroom.verifiers.container.runtime.interface import VerificationRuntime
from cleanroom.verifiers.container.runtime.records import (
    AgentContainerSpec,
    ExecOptions,
    Limits,
    RuntimeUnavailable,
    ServiceState,
    StartedContainer,
    StateCopy,
    StateTooLarge,
    VerifierContainerSpec,
)

__all__ = [
    "AgentContainerSpec",
    "ExecOptions",
    "Limits",
    "RuntimeCapabilities",
    "RuntimeUnavailable",
    "ServiceState",
    "StartedContainer",
    "StateCopy",
    "StateTooLarge",
    "VerificationRuntime",
    "VerifierContainerSpec",
]
