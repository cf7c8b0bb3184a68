"""A run that needs what its runtime cannot do is refused by name before anything starts,
from the capabilities the runtime declares, never found out by a call that fails
halfway; the Docker runtime declares every job."""

from __future__ import annotations

from dataclasses import astuple, replace
from pathlib import Path
from typing import Any, cast

import pytest

import cleanroom
from cleanroom.core.errors import UnsupportedByRuntimeError
from cleanroom.redteam.matrix import Row, RowKind
from cleanroom.redteam.run_matrix import refused_rows, run_matrix
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.run.capability_check import (
    acted_on_uses_services,
    required_capabilities,
)
from cleanroom.verifiers.container.runtime import RuntimeCapabilities, VerificationRuntime
from cleanroom.verifiers.container.runtime.capabilities import FULL
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task, load_task
from cleanroom.verifiers.container.verify import (
    ActedOn,
    AgentSpec,
    VerifyOptions,
    verify_acted_on,
    verify_task,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"
NONE = RuntimeCapabilities(
    compose_services=False, verifier_in_agent_network=False, container_programs_reader=False
)


class _Untouched:
    """A resource of the runtime that no refused run may reach."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the runtime was used ({name}) by a run it cannot do")


class _Runtime:
    """A runtime that declares ``capabilities`` and fails any call made on it."""

    def __init__(self, capabilities: RuntimeCapabilities) -> None:
        self.capabilities = capabilities
        self.images = self.containers = self.files = self.state = self.networks = _Untouched()


def runtime(capabilities: RuntimeCapabilities) -> VerificationRuntime:
    return cast(VerificationRuntime, _Runtime(capabilities))


def task(name: str) -> Task:
    return load_task(EXAMPLES / name)


def test_a_live_processes_verifier_in_sealed_is_refused_where_it_cannot_join_the_agent() -> None:
    lacking = runtime(replace(FULL, verifier_in_agent_network=False))
    with pytest.raises(UnsupportedByRuntimeError) as caught:
        verify_task(task("http-sum"), AgentSpec.solution(), lacking, VerifyOptions(Mode.SEALED))
    assert caught.value.missing == ("verifier_in_agent_network",)
    assert caught.value.runtime == "_Runtime"
    assert "http-sum" in str(caught.value) and "live_processes" in str(caught.value)


def test_a_live_processes_verifier_in_the_agents_own_container_needs_no_join() -> None:
    needed = required_capabilities(task("http-sum"), VerifyOptions(Mode.CLEARED), services=True)
    assert needed == NONE


def test_compose_services_are_refused_where_the_runtime_cannot_start_them() -> None:
    lacking = runtime(replace(FULL, compose_services=False))
    with pytest.raises(UnsupportedByRuntimeError) as caught:
        verify_task(task("compose-store"), AgentSpec.noop(), lacking, VerifyOptions(Mode.SHARED))
    assert caught.value.missing == ("compose_services",)


def test_the_in_container_reader_is_refused_where_the_runtime_cannot_read_so() -> None:
    lacking = runtime(replace(FULL, container_programs_reader=False))
    options = VerifyOptions(Mode.SHARED, in_container_reader=True)
    with pytest.raises(UnsupportedByRuntimeError) as caught:
        verify_task(task("fix-median"), AgentSpec.noop(), lacking, options)
    assert caught.value.missing == ("container_programs_reader",)


def test_every_missing_job_is_named_at_once() -> None:
    options = VerifyOptions(Mode.SHARED, in_container_reader=True)
    needed = required_capabilities(task("compose-store"), options, services=True)
    assert NONE.lacking(needed) == ("compose_services", "container_programs_reader")


def test_a_container_acted_on_without_its_services_needs_none_reached() -> None:
    """Another harness's container of a compose task, handed over without its services:
    nothing is reached beside it, so the runtime need not do services."""
    sealed = VerifyOptions(Mode.SEALED)
    services = acted_on_uses_services(task("compose-store"), sealed, services_given=False)
    assert required_capabilities(task("compose-store"), sealed, services=services) == NONE


def test_a_container_acted_on_with_its_services_needs_them_reached() -> None:
    acted = ActedOn(container="theirs", image="theirs-image", services=(("db", "db-ctr"),))
    with pytest.raises(UnsupportedByRuntimeError) as caught:
        verify_acted_on(task("compose-store"), acted, runtime(NONE), VerifyOptions(Mode.SEALED))
    assert caught.value.missing == ("compose_services",)


def test_the_matrix_refuses_before_any_image_is_built() -> None:
    rows = [Row("http-sum", RowKind.HONEST), Row("fix-median", RowKind.NOOP)]
    tasks = [task("http-sum"), task("fix-median")]
    lacking = runtime(NONE)
    assert set(refused_rows(tasks, rows, lacking, (Mode.SEALED,))) == {"http-sum/honest"}
    assert refused_rows(tasks, rows, lacking, (Mode.CLEARED,)) == {}
    with pytest.raises(UnsupportedByRuntimeError):
        run_matrix(tasks, rows, lacking, modes=(Mode.SEALED,))


def test_the_refusal_is_a_cleanroom_error() -> None:
    assert issubclass(cleanroom.UnsupportedByRuntimeError, cleanroom.CleanroomError)


def test_the_docker_runtime_declares_every_job() -> None:
    assert DockerRuntime.capabilities == FULL
    assert all(astuple(DockerRuntime.capabilities))
