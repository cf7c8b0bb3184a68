"""What a run needs of its runtime beyond what every runtime does, checked before it
starts: a run its runtime cannot do is refused with `UnsupportedByRuntimeError`, naming
each missing job, instead of failing at the first call that needs it."""

from __future__ import annotations

from cleanroom.core.errors import UnsupportedByRuntimeError
from cleanroom.verifiers.container.modes import plan
from cleanroom.verifiers.container.runtime import RuntimeCapabilities, VerificationRuntime
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.verify_options import VerifyOptions


def required_capabilities(
    task: Task, options: VerifyOptions, *, services: bool
) -> RuntimeCapabilities:
    """What a run of ``task`` verified as ``options`` say needs of its runtime.

    ``services``: the run starts the task's compose services itself, or reaches those
    another harness started (a task without a compose file has none either way).
    """
    apart = task.verifier_environment() is not None or not plan(options.mode).in_agent_container
    return RuntimeCapabilities(
        compose_services=services and task.compose is not None,
        verifier_in_agent_network=apart and task.config.verifier.live_processes,
        container_programs_reader=options.in_container_reader,
    )


def acted_on_uses_services(task: Task, options: VerifyOptions, services_given: bool) -> bool:
    """Whether verifying a container another harness started reaches the compose services
    it started beside it: only a sealed verifier of the task's own image does, on a
    network of its own (`run.existing_container`)."""
    return (
        services_given
        and plan(options.mode).freezes_agent
        and not task.config.verifier.live_processes
        and task.verifier_environment() is None
    )


def refuse_unless_capable(
    task: Task, needed: RuntimeCapabilities, runtime: VerificationRuntime
) -> None:
    """Raise `UnsupportedByRuntimeError` when ``runtime`` cannot do a job of ``needed``."""
    missing = runtime.capabilities.lacking(needed)
    if not missing:
        return
    name = type(runtime).__name__
    jobs = "; ".join(f"{job}: {RuntimeCapabilities.what(job)}" for job in missing)
    raise UnsupportedByRuntimeError(
        f"{task.name}: this run needs what {name} cannot do ({jobs}); run it on a runtime "
        "that can, such as cleanroom's Docker path",
        runtime=name,
        missing=missing,
    )
