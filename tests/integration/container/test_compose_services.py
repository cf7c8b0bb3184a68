"""Compose services beside the agent's container, on real Docker: reached by name in every
mode, waited for before the agent starts, their collect hooks run, and nothing of them left
after a success, a failure or an exception."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.runtime.docker.containers import DockerContainers
from cleanroom.verifiers.container.task import Task, load_task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task

pytestmark = pytest.mark.docker

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"
SEALED = VerifyOptions(Mode.SEALED)


def store_variant(tmp_path: Path, compose_edit: tuple[str, str] | None = None) -> Task:
    root = tmp_path / "compose-store-copy"
    shutil.copytree(EXAMPLES / "compose-store", root)
    if compose_edit is not None:
        compose = root / "environment" / "docker-compose.yaml"
        text = compose.read_text()
        assert compose_edit[0] in text
        compose.write_text(text.replace(*compose_edit))
    return load_task(root)


def traced(runtime: DockerRuntime) -> DockerRuntime:
    """The same daemon, with a label of this test's own on everything it creates."""
    return DockerRuntime(runtime.docker, {**runtime.labels, "cleanroom.case": uuid.uuid4().hex})


def left_behind(runtime: DockerRuntime) -> list[str]:
    case = f"cleanroom.case={runtime.labels['cleanroom.case']}"
    containers = [c.name for c in runtime.docker.containers_labelled(case)]
    return containers + runtime.docker.networks_labelled(case)


# `sealed`'s reach is in every run (below); the other modes' in `make test-integrations`.
@pytest.mark.integrations
@pytest.mark.parametrize("mode", [Mode.SHARED, Mode.CLEARED])
def test_the_verifier_in_the_agents_container_reaches_the_services(
    mode: Mode, example, runtime: DockerRuntime
) -> None:
    task = example("compose-store")
    solved = verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(mode))
    assert (solved.status, solved.score) == (Status.SUCCESS, 1.0), solved.detail
    idle = verify_task(task, AgentSpec.noop(), runtime, VerifyOptions(mode))
    assert (idle.status, idle.score, idle.reason) == (Status.FAILURE, 0.0, None), idle.detail


def test_the_collect_hook_runs_in_its_service_before_the_verifier(
    example, runtime: DockerRuntime
) -> None:
    solved = verify_task(example("compose-store"), AgentSpec.solution(), runtime, SEALED)
    assert solved.details["collect"] == [
        {
            "service": "store",
            "command": "touch /srv/frozen",
            "exit_code": 0,
            "timed_out": False,
            "output_tail": "",
        }
    ]
    assert "frozen=yes" in solved.details["test_output_tail"]


def test_a_process_the_agent_leaves_cannot_change_the_services_after_the_agent_phase(
    example, runtime: DockerRuntime
) -> None:
    # The right answer arrives only after the agent phase: in sealed the agent's processes
    # are killed before the hook freezes the store, so it never arrives.
    late = AgentSpec.command(
        "(sleep 2; while true; do curl -fsS -X PUT --data 157 http://store:8080/kv/total;"
        " sleep 0.2; done) >/dev/null 2>&1 &"
    )
    outcome = verify_task(example("compose-store"), late, runtime, SEALED)
    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0), outcome.detail


# Sends the right answer once test.sh is in the agent's container, i.e. during verification.
LATE_WRITER = AgentSpec.command(
    "(while [ ! -e /tests/test.sh ]; do sleep 0.05; done;"
    " curl -fsS -X PUT --data 157 http://store:8080/kv/total) >/dev/null 2>&1 &"
)
# A verifier that reads the store a moment after it starts, as one with setup work would:
# the leftover writer's answer lands first, every time.
TOTAL_ONLY = (
    "#!/bin/bash\n"
    "sleep 1.5\n"
    "total=$(curl -fsS --max-time 3 http://store:8080/kv/total)\n"
    'if [ "$total" = 157 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
)


# What fools `shared`: in `make test-integrations`; the freezing hook's hold is in every run.
@pytest.mark.integrations
def test_a_leftover_process_writing_to_a_service_fools_shared_without_a_freeze(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    """The positive control: the route through a service is real where nothing stops it."""
    task = store_variant(tmp_path)
    toml = task.root / "task.toml"
    toml.write_text(toml.read_text().replace('command = "touch /srv/frozen"', 'command = "true"'))
    (task.tests_dir / "test.sh").write_text(TOTAL_ONLY)
    task = load_task(task.root)
    fooled = verify_task(task, LATE_WRITER, runtime, VerifyOptions(Mode.SHARED))
    assert fooled.score == 1.0, fooled.details
    sealed = verify_task(task, LATE_WRITER, runtime, SEALED)
    assert (sealed.status, sealed.score) == (Status.FAILURE, 0.0), sealed.details


@pytest.mark.parametrize("mode", [Mode.SHARED, Mode.SEALED])
def test_the_freezing_hook_keeps_a_leftover_process_out(
    mode: Mode, example, runtime: DockerRuntime
) -> None:
    outcome = verify_task(example("compose-store"), LATE_WRITER, runtime, VerifyOptions(mode))
    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0), outcome.details


def test_with_a_public_environment_the_services_reach_out_and_the_sealed_verifier_does_not(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    task = store_variant(tmp_path)
    toml = task.root / "task.toml"
    toml.write_text(toml.read_text().replace('"no-network"', '"public"'))
    (task.tests_dir / "test.sh").write_text(
        "#!/bin/bash\n"
        "mine=$(ls /sys/class/net | grep -vc '^lo$')\n"
        'if [ "$(cat /app/links)" = 2 ] && [ "$mine" = 1 ]; then echo 1; else echo 0; fi'
        " > /logs/verifier/reward.txt\n"
    )
    count = AgentSpec.command("ls /sys/class/net | grep -vc '^lo$' > /app/links")
    outcome = verify_task(load_task(task.root), count, runtime, SEALED)
    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0), outcome.details


def test_the_sealed_verifier_reaches_the_services_and_nothing_beyond(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    task = store_variant(tmp_path)
    (task.tests_dir / "test.sh").write_text(
        "#!/bin/bash\n"
        "body=$(curl -fsS --max-time 3 http://store:8080/health)\n"
        # One interface: the services' internal network, not the default bridge too.
        "links=$(ls /sys/class/net | grep -vc '^lo$')\n"
        'if [ "$body" = ok ] && [ "$links" = 1 ]; then echo 1; else echo 0; fi'
        " > /logs/verifier/reward.txt\n"
    )
    outcome = verify_task(task, AgentSpec.noop(), runtime, SEALED)
    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0), outcome.details


def test_a_container_name_is_one_more_name_of_the_service(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    task = store_variant(
        tmp_path, ("    build: ./store\n", "    build: ./store\n    container_name: hb__store\n")
    )
    test = task.tests_dir / "test.sh"
    test.write_text(test.read_text().replace("http://store:8080", "http://hb__store:8080"))
    solved = verify_task(task, AgentSpec.solution(), runtime, SEALED)
    assert (solved.status, solved.score) == (Status.SUCCESS, 1.0), solved.details


def test_a_separate_verifier_does_not_reach_the_services(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    """Harbor's separate verifier is an environment of its own: the agent's services
    reach it only through artifacts, so the store's answer is not seen there."""
    task = store_variant(tmp_path)
    toml = task.root / "task.toml"
    toml.write_text(
        toml.read_text().replace("[verifier]\n", '[verifier]\nenvironment_mode = "separate"\n')
    )
    (task.tests_dir / "test.sh").write_text(TOTAL_ONLY)
    for mode in (Mode.CLEARED, Mode.SEALED):
        outcome = verify_task(
            load_task(task.root), AgentSpec.solution(), runtime, VerifyOptions(mode)
        )
        assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0), outcome.details
        assert "curl" in outcome.details["test_output_tail"]


def test_the_services_live_through_every_step_of_a_multi_step_task(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    """Started once, before the first step: what the first step stored, the second step's
    verifier still reads; the task's collect hook runs at each step."""
    task = store_variant(tmp_path)
    root = task.root
    toml = root / "task.toml"
    toml.write_text(
        toml.read_text().replace('command = "touch /srv/frozen"', 'command = "true"')
        + '\n[[steps]]\nname = "put"\n\n[[steps]]\nname = "check"\n'
    )
    (root / "instruction.md").unlink()
    for step, solve in (("put", (root / "solution" / "solve.sh").read_text()), ("check", "")):
        folder = root / "steps" / step
        (folder / "tests").mkdir(parents=True)
        (folder / "solution").mkdir()
        (folder / "instruction.md").write_text(f"Step {step}.\n")
        (folder / "tests" / "test.sh").write_text(TOTAL_ONLY)
        (folder / "solution" / "solve.sh").write_text(solve or "#!/bin/bash\ntrue\n")
    outcome = verify_task(load_task(root), AgentSpec.solution(), runtime, SEALED)
    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0), outcome.details
    steps = outcome.details["steps"]
    assert [s["step"] for s in steps] == ["put", "check"]
    assert all(s["details"]["collect"][0]["exit_code"] == 0 for s in steps)


def test_nothing_is_left_after_a_success_or_a_failure(example, runtime: DockerRuntime) -> None:
    rt = traced(runtime)
    for agent in (AgentSpec.solution(), AgentSpec.noop()):
        outcome = verify_task(example("compose-store"), agent, rt, SEALED)
        assert outcome.status in (Status.SUCCESS, Status.FAILURE), outcome.detail
        assert left_behind(rt) == []


def test_a_service_that_never_gets_healthy_is_an_environment_error_and_is_removed(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    task = store_variant(
        tmp_path,
        ('"http://127.0.0.1:8080/health"]', '"http://127.0.0.1:8080/nowhere"]\n      retries: 2'),
    )
    compose = task.environment_dir / "docker-compose.yaml"
    compose.write_text(compose.read_text().replace("      retries: 10\n", "").replace("10s", "1s"))
    rt = traced(runtime)
    outcome = verify_task(load_task(task.root), AgentSpec.solution(), rt, SEALED)
    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.ENVIRONMENT_ERROR)
    assert "compose service 'store'" in outcome.detail and "unhealthy" in outcome.detail
    assert left_behind(rt) == []


def test_a_service_that_exits_is_named_with_its_output(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    task = store_variant(
        tmp_path,
        ("    build: ./store\n", "    build: ./store\n    command: [python3, -c, 'x=1/0']\n"),
    )
    rt = traced(runtime)
    outcome = verify_task(task, AgentSpec.solution(), rt, SEALED)
    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.ENVIRONMENT_ERROR)
    assert "exited with code 1" in outcome.detail and "ZeroDivisionError" in outcome.detail
    assert left_behind(rt) == []


class _FailsAfterTheServices(DockerContainers):
    def start_agent(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("a bug of cleanroom's own, after the services started")


def test_nothing_is_left_after_an_exception(example, runtime: DockerRuntime) -> None:
    rt = traced(runtime)
    failing = DockerRuntime(rt.docker, rt.labels)
    failing.containers = _FailsAfterTheServices(rt.docker, failing.labels, failing.images)
    outcome = verify_task(example("compose-store"), AgentSpec.solution(), failing, SEALED)
    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.HARNESS_ERROR)
    assert left_behind(rt) == []


# A store with an admin route that ends it, and a verifier that writes no reward when the
# store does not answer at all (a missing key is a 0, as in the example).
QUIT_ROUTE = (
    "    def do_DELETE(self) -> None:\n"
    "        if self.path == '/quit':\n"
    "            self._answer(200, b'bye')\n"
    "            os._exit(0)\n"
    "        self._answer(404, b'not found')\n"
    "\n"
    "    def do_PUT(self) -> None:\n"
)
STRICT_TEST = (
    "#!/bin/bash\n"
    "set -e\n"
    "total=$(curl -sS --max-time 3 http://store:8080/kv/total)\n"
    'if [ "$total" = 157 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
)


def test_an_agent_that_ends_a_service_gets_its_zero_not_invalid(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    task = store_variant(tmp_path)
    store = task.root / "environment" / "store" / "store.py"
    text = store.read_text()
    assert "    def do_PUT(self) -> None:\n" in text
    store.write_text(text.replace("    def do_PUT(self) -> None:\n", QUIT_ROUTE, 1))
    (task.tests_dir / "test.sh").write_text(STRICT_TEST)
    task = load_task(task.root)
    noop = verify_task(task, AgentSpec.noop(), runtime, SEALED)
    assert (noop.status, noop.score) == (Status.FAILURE, 0.0), noop.details  # a clean 0

    ender = AgentSpec.command("curl -sS -X DELETE http://store:8080/quit; sleep 1")
    outcome = verify_task(task, ender, runtime, SEALED)

    # The store is gone when test.sh runs: no reward, which is a 0, never `invalid`.
    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0), outcome.details
    assert outcome.details["reward_source"] == "missing"
