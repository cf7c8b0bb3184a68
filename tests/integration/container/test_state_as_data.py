"""Whatever names, modes and link graphs the agent leaves in its state, a sealed
verification ends in a score: never `invalid`, never a crash (the agent's state is data)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task

pytestmark = pytest.mark.docker

names = st.binary(min_size=1, max_size=12).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
)
targets = st.one_of(
    st.sampled_from(
        [
            "/tests",
            "/tests/expected.txt",
            "..",
            "../..",
            "/",
            "/logs/verifier/reward.txt",
            "/proc/self/root/tests",
            "/dev/stdin",
            "/usr/bin/python3",
            "self",
            # Frozen at install: dangling, in the image, under the container's own mounts,
            # or named so that no stat of the daemon's or the kernel's can answer.
            "/tmp/expected.txt",
            "/tmp",
            "/dev/shm/expected",
            "/dev/" + "a" * 300 + "/b",
            "/usr/" + "x/" * 2100,
        ]
    ),
    names.map(lambda b: b.decode("latin-1")),
)
kinds = st.sampled_from(["file", "folder", "link", "fifo", "hardlink"])
places = st.sampled_from(["/app", "/app/sub", "/logs/artifacts", "/new"])
operations = st.lists(
    st.tuples(kinds, places, names, targets, st.integers(0, 0o7777)), min_size=1, max_size=8
)


def quoted(raw: bytes | str) -> str:
    data = raw.encode("latin-1") if isinstance(raw, str) else raw
    return "$'" + "".join(f"\\x{b:02x}" for b in data) + "'"


def script(ops: list[tuple[str, str, bytes, str, int]]) -> str:
    lines = ["mkdir -p /app/sub /new/inner /logs/artifacts", "cd /"]
    for kind, place, name, target, mode in ops:
        path = f"{quoted(place.encode())}/{quoted(name)}"
        lines.append(
            {
                "file": f"printf x > {path}; chmod {mode:o} {path}",
                "folder": f"mkdir -p {path}; chmod {mode:o} {path}",
                "link": f"ln -sfn {quoted(target)} {path}",
                "fifo": f"mkfifo {path}",
                "hardlink": f"ln -f /app/stats.py {path}",
            }[kind]
            + " 2>/dev/null || true"
        )
    return "\n".join(lines) + "\n"


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=operations)
def test_any_state_is_scored_never_invalid(
    ops: list[tuple[str, str, bytes, str, int]],
    example: Callable[[str], Task],
    runtime: DockerRuntime,
) -> None:
    agent = AgentSpec.script(script(ops), "arbitrary state")

    outcome = verify_task(example("fix-median"), agent, runtime, VerifyOptions(Mode.SEALED))

    assert outcome.status is not Status.INVALID, (outcome.reason, outcome.detail, script(ops))


def test_a_non_utf8_top_level_folder_without_a_planted_reward_is_scored(
    example: Callable[[str], Task], runtime: DockerRuntime
) -> None:
    odd = quoted(b"out\xff")
    agent = AgentSpec.script(f"mkdir -p /{odd}/x && echo 1 > /{odd}/x/f\n", "odd name")

    outcome = verify_task(example("fix-median"), agent, runtime, VerifyOptions(Mode.SEALED))

    assert outcome.status is not Status.INVALID, (outcome.reason, outcome.detail)


@pytest.mark.parametrize(("folders", "expected"), [(64, Status.SUCCESS), (65, Status.FAILURE)])
def test_new_top_level_folders_past_the_cap_are_the_agents_zero_with_no_planted_reward(
    example: Callable[[str], Task], runtime: DockerRuntime, folders: int, expected: Status
) -> None:
    # The honest fix beside the folders (a folder with something in it is state; an empty
    # one is not carried): up to the cap it scores, past it the agent's 0.
    task = example("fix-median")
    fix = (task.solution_dir / "solve.sh").read_text()
    make = f"for n in $(seq {folders}); do mkdir -p /made-$n && echo x > /made-$n/f; done\n"
    agent = AgentSpec.script(fix + make, f"{folders} folders")

    outcome = verify_task(task, agent, runtime, VerifyOptions(Mode.SEALED))

    assert outcome.status is expected, (outcome.reason, outcome.detail)
    if expected is Status.FAILURE:
        assert outcome.reason is Reason.WORKSPACE_BROKEN
        assert f"created {folders} new top-level folders" in outcome.detail


@pytest.mark.integrations
def test_a_hundred_thousand_links_are_the_agents_zero_within_harbors_budget(
    example: Callable[[str], Task], runtime: DockerRuntime
) -> None:
    make = "import os\nfor i in range(100_000): os.symlink(f'/tmp/x{i}', f'/app/l{i}')\n"
    agent = AgentSpec.script(f"python3 -c {quoted(make)}\n", "100,000 links")

    outcome = verify_task(example("fix-median"), agent, runtime, VerifyOptions(Mode.SEALED))

    assert (outcome.status, outcome.reason) == (Status.FAILURE, Reason.WORKSPACE_BROKEN)
    assert "symbolic links" in (outcome.detail or "")
    assert outcome.details["timings"]["verify_s"] < 60  # Harbor's default verifier budget
