"""Files looked at through the Docker archive API: nothing runs in the agent's container.

``cleared`` reads the reward, checks that it was cleared and that the work dir is a
folder this way, so an agent that replaces the programs a reader would run (``sh``,
``stat``, ``head``, ``rm``, ``test``) no longer answers for them; links, FIFOs and devices
are refused and a huge file costs its first bytes, as on the host.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from cleanroom.core.observed_file import FileKind
from cleanroom.core.outcomes import Reason, Status
from cleanroom.redteam.catalogue import by_id
from cleanroom.verifiers.container.decision.reward import REWARD_CAP_BYTES
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime import AgentContainerSpec, Limits
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task

pytestmark = pytest.mark.docker

DIR = "/logs/verifier"
# What the agent leaves, each at its own path; then every program a reader could run in
# the container is removed, so a read that ran one would fail.
LEAVES = f"""
set -e
mkdir -p {DIR}
printf '1\\r\\n' > {DIR}/crlf.txt
printf '0.25\\n' > {DIR}/target.txt
ln -s {DIR}/target.txt {DIR}/link.txt
mkfifo {DIR}/fifo.txt
mknod {DIR}/null.txt c 1 3
mkdir {DIR}/dir.txt
printf '1\\n' > {DIR}/huge.txt && truncate -s 1G {DIR}/huge.txt
printf 'x' > {DIR}/file
ln -s {DIR}/loop.txt {DIR}/loop.txt
rm -f /usr/bin/head /usr/bin/stat /usr/bin/cat /bin/dash /bin/bash
"""


@pytest.fixture
def agent_container(runtime: DockerRuntime, example: Callable[[str], Task]) -> Iterator[str]:
    image, _ = runtime.images.for_task(example("fix-median"))
    spec = AgentContainerSpec(image, Limits(), None, "archive-read", logs_on_volume=True)
    ctr = runtime.containers.start_agent(spec)
    try:
        assert runtime.containers.exec(ctr, ["sh", "-c", LEAVES], user="0").exit_code == 0
        yield ctr
    finally:
        runtime.containers.remove(ctr)


def test_a_regular_file_is_read_whole_with_no_shell_in_the_container(
    runtime: DockerRuntime, agent_container: str
) -> None:
    found = runtime.files.read(agent_container, f"{DIR}/crlf.txt")

    assert (found.kind, found.data, found.size) == (FileKind.REGULAR, b"1\r\n", 3)


def test_a_link_is_refused_with_its_target_and_not_followed(
    runtime: DockerRuntime, agent_container: str
) -> None:
    found = runtime.files.read(agent_container, f"{DIR}/link.txt")

    assert (found.kind, found.note, found.data) == (FileKind.SYMLINK, f"{DIR}/target.txt", b"")


@pytest.mark.parametrize(
    ("name", "note"),
    [("fifo.txt", "fifo"), ("null.txt", "character device"), ("dir.txt", "directory")],
)
def test_a_fifo_device_or_folder_is_reported_without_blocking(
    runtime: DockerRuntime, agent_container: str, name: str, note: str
) -> None:
    start = time.monotonic()

    found = runtime.files.read(agent_container, f"{DIR}/{name}")

    assert (found.kind, found.note) == (FileKind.OTHER, note)
    assert time.monotonic() - start < 5


def test_a_huge_file_is_oversize_and_costs_only_its_first_bytes(
    runtime: DockerRuntime, agent_container: str
) -> None:
    start = time.monotonic()

    found = runtime.files.read(agent_container, f"{DIR}/huge.txt")

    assert (found.kind, found.size) == (FileKind.OVERSIZE, 1 << 30)
    assert found.data[:2] == b"1\n" and len(found.data) == REWARD_CAP_BYTES
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("path", [f"{DIR}/loop.txt", f"{DIR}/loop.txt/reward.txt"])
def test_a_loop_of_links_is_reported_not_a_failure_of_the_daemon(
    runtime: DockerRuntime, agent_container: str, path: str
) -> None:
    found = runtime.files.read(agent_container, path)

    assert (found.kind, found.note) == (FileKind.OTHER, "a loop of symbolic links")


@pytest.mark.parametrize("path", [f"{DIR}/absent.txt", f"{DIR}/file/reward.txt", "/nowhere/x"])
def test_nothing_at_the_path_is_missing(
    runtime: DockerRuntime, agent_container: str, path: str
) -> None:
    assert runtime.files.read(agent_container, path).kind is FileKind.MISSING


def test_a_trojaned_head_fools_only_a_reader_that_runs_it_in_the_container(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    attack = by_id("trojan-head")
    task = example(attack.target)
    agent = AgentSpec.script(attack.script, attack.id)

    naive = verify_task(task, agent, runtime, VerifyOptions(Mode.SHARED, in_container_reader=True))
    shared = verify_task(task, agent, runtime, VerifyOptions(Mode.SHARED))
    cleared = verify_task(task, agent, runtime, VerifyOptions(Mode.CLEARED))

    assert (naive.status, naive.score) == (Status.SUCCESS, 1.0), naive
    assert (shared.status, shared.score) == (Status.FAILURE, 0.0), shared
    assert (cleared.status, cleared.score) == (Status.FAILURE, 0.0), cleared
    assert cleared.details["reward_source"] == "/logs/verifier/reward.txt"


LONG_TARGET = "/" + "/".join(["a" * 250] * 16)


@pytest.mark.parametrize(
    "link", ["ln -s /app /app", f"ln -s {LONG_TARGET} /app"], ids=["loop", "too-long"]
)
def test_a_work_dir_made_a_link_the_daemon_cannot_follow_is_the_agents_zero_in_cleared(
    runtime: DockerRuntime, example: Callable[[str], Task], link: str
) -> None:
    agent = AgentSpec.command(f"cd / && rm -rf /app && {link}")

    outcome = verify_task(example("fix-median"), agent, runtime, VerifyOptions(Mode.CLEARED))

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0), outcome
    assert outcome.reason is Reason.WORKSPACE_BROKEN


@pytest.mark.parametrize(
    ("attack_id", "reason"),
    [("trojan-rm", Reason.TAMPER), ("trojan-test", Reason.WORKSPACE_BROKEN)],
)
def test_cleared_sees_through_a_trojaned_rm_or_test_and_scores_the_agents_zero(
    runtime: DockerRuntime, example: Callable[[str], Task], attack_id: str, reason: Reason
) -> None:
    # Before cleared looked through the archive API, the trojaned rm left the planted
    # reward in place (scored 1) and the trojaned test let a setup command fail to start
    # in a work dir that is a file (invalid: an escaped 0).
    attack = by_id(attack_id)
    agent = AgentSpec.script(attack.script, attack.id)

    outcome = verify_task(example(attack.target), agent, runtime, VerifyOptions(Mode.CLEARED))

    assert (outcome.status, outcome.score, outcome.reason) == (Status.FAILURE, 0.0, reason)


def test_cleared_reads_a_harbor_reward_json_of_several_metrics(
    runtime: DockerRuntime, variant: Callable[..., Task]
) -> None:
    writes = (
        "#!/bin/bash\n"
        'echo \'{"accuracy": 1, "f1": 0.5, "note_count": 3}\' > /logs/verifier/reward.json\n'
    )
    task = variant("fix-median", {"tests/test.sh": writes}, folder="metrics")

    outcome = verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(Mode.CLEARED))

    assert (outcome.status, outcome.score, outcome.reason) == (Status.FAILURE, 0.0, None)
    assert outcome.details["reward_metrics"] == {"accuracy": 1.0, "f1": 0.5, "note_count": 3.0}
    assert "no single reward" in outcome.details["reward_note"]


def test_cleared_refuses_a_reward_the_verifier_left_as_a_fifo(
    runtime: DockerRuntime, variant: Callable[..., Task]
) -> None:
    task = variant(
        "fix-median",
        {"tests/test.sh": "#!/bin/bash\nmkfifo /logs/verifier/reward.txt\n"},
        folder="fifo-reward",
    )

    outcome = verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(Mode.CLEARED))

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.BAD_REWARD)
    assert "fifo" in outcome.detail
    assert outcome.details["timings"]["read_s"] < 5


@pytest.mark.parametrize("mode", [Mode.CLEARED, Mode.SEALED])
def test_a_result_path_is_read_through_the_archive_api(
    runtime: DockerRuntime, example: Callable[[str], Task], mode: Mode
) -> None:
    # In sealed, a result path outside the reward folder is in the verifier's container.
    outcome = verify_task(
        example("engine-handoff"), AgentSpec.solution(), runtime, VerifyOptions(mode)
    )

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)
    tail = outcome.details["results"]["/work/events.tail.json"]
    assert tail["kind"] == "regular" and '"events"' in tail["text"]
