"""What a verification runtime can do beyond what every runtime does, declared up front.

Every runtime starts containers, runs commands in them, stops them, reads their files
and carries the agent's state (`interface`). A few jobs only some runtimes can do; each
declares which in its `RuntimeCapabilities`, as Harbor's environments declare
``is_mounted`` or ``can_disable_internet``. A run that needs one its runtime lacks is
refused before anything starts (`run.capability_check`), never found out by a call that
fails halfway.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

__all__ = ["FULL", "RuntimeCapabilities"]


@dataclass(frozen=True)
class RuntimeCapabilities:
    """The jobs a runtime can do that not every runtime can. The same record says what a
    run needs of its runtime (True where it needs the job)."""

    compose_services: bool = field(
        metadata={"what": "the task's compose services, on a network of their own"}
    )
    verifier_in_agent_network: bool = field(
        metadata={
            "what": "a verifier in the agent's network namespace, for a verifier that talks "
            "to the agent's processes (live_processes)"
        }
    )
    container_programs_reader: bool = field(
        metadata={
            "what": "reading a file with the container's own programs (shared's "
            "demonstration of a trojaned reader)"
        }
    )

    def lacking(self, needed: RuntimeCapabilities) -> tuple[str, ...]:
        """The names of the jobs ``needed`` asks for that this runtime cannot do."""
        return tuple(
            f.name for f in fields(self) if getattr(needed, f.name) and not getattr(self, f.name)
        )

    @staticmethod
    def what(name: str) -> str:
        """What the job ``name`` is, as a refusal says it."""
        return next(f.metadata["what"] for f in fields(RuntimeCapabilities) if f.name == name)


# Every job: a runtime on a container daemon of this machine (Docker, or podman's API).
FULL = RuntimeCapabilities(
    compose_services=True, verifier_in_agent_network=True, container_programs_reader=True
)
