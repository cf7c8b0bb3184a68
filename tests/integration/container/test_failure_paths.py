"""Every failure ends in an explicit invalid outcome with the reason that names it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.run.existing_container import ActedOn
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.verify import (
    AgentSpec,
    VerifyOptions,
    verify_acted_on,
    verify_path,
    verify_task,
)

from ..acted_containers import act_in, start_container

pytestmark = pytest.mark.docker

SLOW_TEST = "#!/bin/bash\nsleep 30\necho 1 > /logs/verifier/reward.txt\n"
SHORT_LIMIT = '[verifier]\ntimeout_sec = 1\n[environment]\nworkdir = "/app"\n'


# Rewards the verifier itself leaves in sealed mode, read on the host.
def solved_then(task: Task, extra: str, runtime: DockerRuntime) -> Outcome:
    """Sealed verification of an agent that runs the task's solution, then ``extra``."""
    solve = (task.solution_dir / "solve.sh").read_text()
    agent = AgentSpec.script(f"{solve}\n{extra}\n", "solution, then more")
    return verify_task(task, agent, runtime, VerifyOptions(Mode.SEALED))


def rewards_one_if(condition: str) -> str:
    """A test.sh that writes 1 when the shell ``condition`` holds, else 0."""
    return (
        f"#!/bin/bash\nif {condition}; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
    )


HOSTILE_REWARDS = {
    "nan": ("printf 'nan\\n' > /logs/verifier/reward.txt", "not a finite number"),
    "symlink": ("ln -s /etc/hostname /logs/verifier/reward.txt", "symbolic link"),
    "fifo": ("mkfifo /logs/verifier/reward.txt", "fifo"),
    "huge": (
        "printf '1\\n' > /logs/verifier/reward.txt && truncate -s 1G /logs/verifier/reward.txt",
        "over the",
    ),
    "bad-json": ("echo '{\"reward\": NaN}' > /logs/verifier/reward.json", "not valid JSON"),
}


def test_an_image_that_does_not_build_is_an_environment_error_with_its_log(
    runtime: DockerRuntime, variant: Callable[..., Task]
) -> None:
    broken = "FROM cleanroom/base:bookworm\nRUN echo 'no such tool' >&2 && exit 3\n"
    task = variant("fix-median", {"environment/Dockerfile": broken}, folder="broken-build")

    outcome = verify_task(task, AgentSpec.solution(), runtime, VerifyOptions())

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.ENVIRONMENT_ERROR)
    assert "no such tool" in outcome.details["build_log"]


@pytest.mark.parametrize("mode", [Mode.CLEARED, Mode.SEALED])
def test_a_verifier_over_its_limit_is_a_timeout(
    mode: Mode, runtime: DockerRuntime, variant: Callable[..., Task]
) -> None:
    task = variant(
        "fix-median", {"tests/test.sh": SLOW_TEST, "task.toml": SHORT_LIMIT}, folder="slow"
    )

    outcome = verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(mode))

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.VERIFIER_TIMEOUT)
    assert outcome.details["timings"]["verify_s"] < 10
    if mode is Mode.SEALED:  # it times out on the pristine state as well
        assert outcome.details["pristine_control"]["reason"] == "verifier_timeout"


# What the agent can leave that makes the verifier hang on its state, and only on it.
HANGING_STATE = {
    "fifo": ("csv-report", "mkdir -p /app/out && mkfifo /app/out/summary.csv"),
    "endless-module": (
        "fix-median",
        "printf 'def mean(v):\\n    return 0\\ndef median(v):\\n    while True:\\n"
        "        pass\\n' > /app/stats.py",
    ),
}


@pytest.mark.parametrize("how", HANGING_STATE)
def test_state_that_makes_the_verifier_hang_is_the_agents_zero_not_an_exclusion(
    how: str, runtime: DockerRuntime, example: Callable[[str], Task], variant: Callable[..., Task]
) -> None:
    name, command = HANGING_STATE[how]
    toml = (example(name).root / "task.toml").read_text()
    assert "timeout_sec = 60\n" in toml
    task = variant(name, {"task.toml": toml.replace("timeout_sec = 60\n", "timeout_sec = 8\n")})

    outcome = verify_task(task, AgentSpec.command(command), runtime, VerifyOptions(Mode.SEALED))

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0), outcome
    assert outcome.reason is Reason.BROKE_VERIFIER
    assert outcome.details["pristine_control"]["status"] == "failure"


def test_a_dead_daemon_makes_the_rollout_unavailable_not_a_failure(
    example: Callable[[str], Task], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")

    outcome = verify_path(example("fix-median").root, AgentSpec.solution(), VerifyOptions())

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.VERIFIER_UNAVAILABLE)
    assert "nonexistent" in outcome.detail


def test_a_reward_the_agent_made_unremovable_in_cleared_is_its_zero(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    unremovable = AgentSpec.command("mkdir -p /logs/verifier/reward.txt/keep")

    outcome = verify_task(example("fix-median"), unremovable, runtime, VerifyOptions(Mode.CLEARED))

    assert (outcome.status, outcome.score, outcome.reason) == (Status.FAILURE, 0.0, Reason.TAMPER)
    assert outcome.exit_code == 3
    assert "could not be cleared" in outcome.detail


@pytest.mark.parametrize("case", sorted(HOSTILE_REWARDS))
def test_sealed_reads_whatever_the_verifier_left_safely_on_the_host(
    case: str, runtime: DockerRuntime, variant: Callable[..., Task]
) -> None:
    writes, message = HOSTILE_REWARDS[case]
    task = variant("fix-median", {"tests/test.sh": f"#!/bin/bash\n{writes}\n"}, folder="hostile")

    outcome = verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(Mode.SEALED))

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.BAD_REWARD)
    assert message in outcome.detail
    assert outcome.details["timings"]["read_s"] < 5


def test_a_write_into_the_tests_folder_in_sealed_is_tamper_scored_zero(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    agent = AgentSpec.command("touch /etc/ld.so.preload && mkdir -p /tests && touch /tests/x")

    outcome = verify_task(example("fix-median"), agent, runtime, VerifyOptions(Mode.SEALED))

    assert (outcome.status, outcome.score, outcome.reason) == (Status.FAILURE, 0.0, Reason.TAMPER)
    assert outcome.details["tamper"] == ["A /tests", "A /tests/x"]
    assert "A /etc/ld.so.preload" in outcome.details["unseen_by_verifier"]["first"]


def test_a_change_outside_the_state_never_reaches_the_sealed_verifier(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    # The solution, plus a preload library list naming a library that does not exist:
    # were it seen, every program of the verifier would print an error at start.
    outcome = solved_then(
        example("fix-median"), "echo /nonexistent.so > /etc/ld.so.preload", runtime
    )

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)
    assert "nonexistent" not in outcome.details["test_output_tail"]


def test_a_work_dir_replaced_by_a_file_is_the_agents_zero_not_an_exclusion(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    agent = AgentSpec.command("cd / && rm -rf /app && echo x > /app")

    for mode in (Mode.CLEARED, Mode.SEALED):
        outcome = verify_task(example("fix-median"), agent, runtime, VerifyOptions(mode))

        assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0), mode
        assert outcome.reason is Reason.WORKSPACE_BROKEN, mode


def test_a_huge_sparse_file_in_the_work_dir_is_the_agents_zero_and_costs_no_disk(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    agent = AgentSpec.command("truncate -s 100G /app/sparse.bin")

    outcome = verify_task(example("fix-median"), agent, runtime, VerifyOptions(Mode.SEALED))

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)
    assert outcome.reason is Reason.WORKSPACE_TOO_LARGE
    assert outcome.details["timings"]["total_s"] < 30


def test_a_work_dir_deeper_than_path_max_is_the_agents_zero_never_a_crash(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    # Python, not a shell loop: bash's cd looks up the whole path each step (minutes).
    deep = (
        'python3 -c \'import os\nos.chdir("/app")\nfor _ in range(1500):\n'
        '    os.mkdir("deep"); os.chdir("deep")\nopen("leaf", "w").close()\''
    )

    outcome = verify_task(
        example("fix-median"), AgentSpec.command(deep), runtime, VerifyOptions(Mode.SEALED)
    )

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)
    assert outcome.reason is Reason.WORKSPACE_BROKEN
    assert "PATH_MAX" in outcome.detail


def test_a_device_node_in_the_work_dir_never_reaches_the_verifier(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    outcome = solved_then(example("fix-median"), "mknod /app/zero c 1 5", runtime)

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)
    assert outcome.details["state_dropped"] == ["app/zero"]


def test_the_sealed_verifier_cannot_make_device_nodes(
    runtime: DockerRuntime, variant: Callable[..., Task]
) -> None:
    test_sh = rewards_one_if("mknod /tmp/zero c 1 5 2>/dev/null")
    task = variant("fix-median", {"tests/test.sh": test_sh}, folder="mknod")

    outcome = verify_task(task, AgentSpec.noop(), runtime, VerifyOptions(Mode.SEALED))

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)


def test_a_top_level_folder_the_agent_created_is_state_the_verifier_sees(
    runtime: DockerRuntime, variant: Callable[..., Task]
) -> None:
    test_sh = rewards_one_if('[ "$(cat /output/answer.txt)" = 42 ]')
    task = variant("fix-median", {"tests/test.sh": test_sh}, folder="output")
    agent = AgentSpec.command("mkdir -p /output && echo 42 > /output/answer.txt")

    outcome = verify_task(task, agent, runtime, VerifyOptions(Mode.SEALED))

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)
    assert "/output" in outcome.details["state_paths"]


def test_odd_but_legal_entries_in_the_work_dir_are_carried_to_the_verifier(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    odd = (
        "ln /etc/passwd /app/hardlink; ln -s /app /app/loop; mkfifo /app/pipe; "
        "printf x > \"/app/$(printf 'bad\\xff\\x01name')\"; "
        "mkdir -p /app/locked && touch /app/locked/f && chmod 000 /app/locked"
    )

    outcome = solved_then(example("fix-median"), odd, runtime)

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0), outcome.detail


# Busy processes throttled to a small CPU limit defeat Docker's cgroup-v1 freezer (at
# 0.05 CPU, 2 of 15 tries froze on the 2-core development machine) and take seconds to die.
def busy_processes(count: int) -> str:
    return (
        f"for _ in $(seq {count}); do\n"
        "    setsid nohup sh -c 'while :; do :; done' >/dev/null 2>&1 </dev/null &\n"
        "done"
    )


# What each task's solution leaves, checked by a test.sh cheap enough for 0.05 CPU.
SOLVED = {
    "fix-median": "grep -q 'ordered\\[mid - 1\\]' /app/stats.py",
    "http-sum": "curl -fsS --max-time 5 http://127.0.0.1:8080/health | grep -qx ok",
}


def starved(name: str, example: Callable[[str], Task], variant: Callable[..., Task]) -> Task:
    """The example task ``name`` under a CPU limit small enough to defeat the freezer."""
    toml = (example(name).root / "task.toml").read_text()
    assert "cpus = 1\n" in toml
    files = {
        "task.toml": toml.replace("cpus = 1\n", "cpus = 0.05\n"),
        "tests/test.sh": rewards_one_if(SOLVED[name]),
    }
    return variant(name, files)


def solved_leaving_busy_processes(task: Task, runtime: DockerRuntime) -> Outcome:
    """Sealed verification of the task's solution (in a subshell: it may exit), after
    which the agent leaves busy processes behind."""
    solve = (task.solution_dir / "solve.sh").read_text()
    agent = AgentSpec.script(f"(\n{solve}\n)\n{busy_processes(8)}\n", "solution, then busy")
    return verify_task(task, agent, runtime, VerifyOptions(Mode.SEALED))


@pytest.mark.parametrize(
    ("name", "stopped"),
    # Processes nothing needs are killed where the freezer refuses even once.
    [("fix-median", {"frozen", "killed: they could not be frozen"}), ("http-sum", {"frozen"})],
)
def test_busy_processes_under_a_small_cpu_limit_are_stopped_and_the_work_scores(
    name: str,
    stopped: set[str],
    runtime: DockerRuntime,
    example: Callable[[str], Task],
    variant: Callable[..., Task],
) -> None:
    outcome = solved_leaving_busy_processes(starved(name, example, variant), runtime)

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0), outcome
    assert outcome.details["agent_processes"] in stopped


# The tests wait for the answer the agent was to leave: on the untouched state they
# overrun their limit, and only the solution's run shows the limit is sufficient.
WAITS_FOR_THE_ANSWER = """#!/bin/bash
while [ ! -e /app/tally.txt ]; do sleep 0.2; done
exec bash /tests/compare.sh
"""


def waiting_word_tally(
    example: Callable[[str], Task], variant: Callable[..., Task], folder: str
) -> Task:
    """word-tally with a 6 s limit, its tests waiting for the answer first."""
    original = example("word-tally")
    toml = (
        (original.root / "task.toml").read_text().replace("timeout_sec = 60\n", "timeout_sec = 6\n")
    )
    return variant(
        "word-tally",
        {
            "task.toml": toml,
            "tests/test.sh": WAITS_FOR_THE_ANSWER,
            "tests/compare.sh": (original.root / "tests" / "test.sh").read_text(),
        },
        folder=folder,
    )


# The idle agent (a command that does nothing) in every run; no agent at all in `make
# test-integrations`.
@pytest.mark.parametrize("agent", [pytest.param("noop", marks=pytest.mark.integrations), "idle"])
def test_an_agent_that_leaves_tests_waiting_scores_its_zero_when_the_solution_fits_the_limit(
    agent: str, runtime: DockerRuntime, example: Callable[[str], Task], variant: Callable[..., Task]
) -> None:
    task = waiting_word_tally(example, variant, "waits")
    spec = AgentSpec.noop() if agent == "noop" else AgentSpec.command("true")

    outcome = verify_task(task, spec, runtime, VerifyOptions(Mode.SEALED))

    assert (outcome.status, outcome.score, outcome.reason) == (
        Status.FAILURE,
        0.0,
        Reason.BROKE_VERIFIER,
    ), outcome
    assert outcome.details["pristine_control"]["reason"] == "verifier_timeout"
    assert outcome.details["oracle_control"]["status"] == "success"


def test_with_the_controls_beside_the_verification_the_solutions_run_decides_too(
    runtime: DockerRuntime, example: Callable[[str], Task], variant: Callable[..., Task]
) -> None:
    # As under a harness's short budget: the solution's run starts beside the
    # verification, so the idle agent's overrun is still its 0, never an exclusion.
    task = waiting_word_tally(example, variant, "waits-alongside")
    container, _ = start_container(runtime, task)
    image, _ = runtime.images.for_task(task)

    outcome = verify_acted_on(
        task,
        ActedOn(container, image),
        runtime,
        VerifyOptions(Mode.SEALED),
        control_alongside=True,
    )

    assert (outcome.status, outcome.reason) == (Status.FAILURE, Reason.BROKE_VERIFIER), outcome
    assert outcome.details["oracle_control"]["status"] == "success"


def test_beside_a_known_control_a_quick_verification_runs_none_and_a_hang_starts_its_own(
    runtime: DockerRuntime, example: Callable[[str], Task], variant: Callable[..., Task]
) -> None:
    # The first verification of the task on its image runs the control every later one
    # shares; a later one that hangs gets a fresh control of its own, started late.
    toml = (example("fix-median").root / "task.toml").read_text()
    task = variant(
        "fix-median", {"task.toml": toml.replace("timeout_sec = 60\n", "timeout_sec = 8\n")}
    )
    image, _ = runtime.images.for_task(task)

    def verified(script: str) -> Outcome:
        container, _ = start_container(runtime, task)
        act_in(runtime, task, container, script)
        return verify_acted_on(
            task,
            ActedOn(container, image),
            runtime,
            VerifyOptions(Mode.SEALED),
            control_alongside=True,
        )

    first = verified("bash /solution/solve.sh")
    second = verified("bash /solution/solve.sh")
    hung = verified(HANGING_STATE["endless-module"][1])

    assert (first.status, second.status) == (Status.SUCCESS, Status.SUCCESS)
    assert (hung.status, hung.reason) == (Status.FAILURE, Reason.BROKE_VERIFIER), hung
    assert hung.details["pristine_control"]["status"] == "failure"


def test_a_fifo_on_a_check_whose_pristine_run_takes_over_half_the_limit_is_the_agents_zero(
    runtime: DockerRuntime, example: Callable[[str], Task], variant: Callable[..., Task]
) -> None:
    # The pristine run takes 5 s of an 8 s limit; the FIFO makes the check hang.
    original = example("csv-report")
    toml = (
        (original.root / "task.toml").read_text().replace("timeout_sec = 60\n", "timeout_sec = 8\n")
    )
    slow_first = (
        (original.root / "tests" / "test.sh").read_text().replace("exec ", "sleep 5\nexec ", 1)
    )
    task = variant(
        "csv-report", {"task.toml": toml, "tests/test.sh": slow_first}, folder="slow-check"
    )
    fifo = AgentSpec.command("mkdir -p /app/out && mkfifo /app/out/summary.csv")

    outcome = verify_task(task, fifo, runtime, VerifyOptions(Mode.SEALED))

    assert (outcome.status, outcome.reason) == (Status.FAILURE, Reason.BROKE_VERIFIER), outcome
    assert outcome.details["pristine_control"]["setup_and_test_s"] > 4
