"""The catalogue covers every known route to forge a reward, each with an explicit demonstration."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.redteam.catalogue import ATTACKS, ClearedExpectation, Demonstration, by_id
from cleanroom.redteam.matrix import Row, RowKind
from cleanroom.redteam.run_matrix import options_for
from cleanroom.verifiers.container.modes import Mode

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"

# The forging routes the catalogue was built for, route by route.
FORGING_ROUTES = [
    "planted reward.txt",
    "planted reward.json beside an honest reward.txt",
    "a background process that keeps writing the reward during and after test.sh",
    "a symlinked /logs/verifier",
    "a symlinked reward file",
    "a conftest.py planted in /tests",
    "a trojaned pytest on PATH",
    "a trojaned python on PATH",
    "a trojaned curl on PATH",
    "a trojaned bash on PATH",
    "a trojaned head on PATH, which a reward reader runs in the container as root",
    "a planted reward and a trojaned rm on PATH, which clears nothing and reports success",
    "the work dir replaced by a file and a trojaned test on PATH that calls it a folder",
    "a sitecustomize.py hook",
    "a .pth hook",
    "a read-only or immutable verifier directory",
    "a FIFO as the reward",
    "a huge file as the reward",
    "junk reward 'nan'",
    "junk reward 'inf'",
    "junk reward '1e9'",
    "junk reward '-1'",
    "a planted reward padded with spaces (' 1 '), which Harbor's float() reads as 1",
    "killing test.sh from a process left behind",
]
# The outside red team's routes and crash inputs, added to those.
RED_TEAM_ROUTES = [
    "a glibc NSS module named in /etc/nsswitch.conf, loaded from the work dir",
    "a pytest.py in the work dir, imported by python3 -m pytest run from there",
    "the verifier's setup script (in /opt) replaced",
    "junk reward 'a reward.json nested 30,000 deep'",
    "junk reward '{\"reward\": 1e400 as an integer}'",
    "a character device as the reward",
    "a work dir deeper than PATH_MAX, with a planted reward",
    "a 100 GiB sparse file in the work dir, with a planted reward",
    "the work dir replaced by a file, to be excluded instead of scored 0",
]
# Routes through Harbor's task format: what the agent leaves the verifier as artifacts.
HARBOR_FORMAT_ROUTES = [
    "an artifact that is a link to the verifier's expected answer in /tests",
]
# The agent's state as data: links resolved in the verifier's view, packaging metadata,
# bytecode, names and counts the harness must not choke on.
STATE_AS_DATA_ROUTES = [
    "a chain of relative links in the artifacts that reads as staying inside them and "
    "resolves to the verifier's expected answer",
    "a link in the work dir to the verifier's expected answer, dangling in the agent's "
    "container, and an answer artifact that links to it",
    "a link in the work dir to the verifier's tests folder, and an answer artifact through it",
    "packaging metadata in the work dir registering a pytest plugin that passes every test",
    "the source left as shipped and a __pycache__ entry with its header holding a fix",
    "a planted reward and a new top-level folder whose name is not UTF-8",
    "a planted reward and 3,000 new top-level folders",
    "a clean filter in the work dir's repository config, which test.sh's git status runs",
]
# Links judged where they are used: a scratch answer test.sh writes later, where a
# link of the agent's already points.
LINKS_WHERE_USED_ROUTES = [
    "the answer a link, dangling in the agent's container, to the scratch file where "
    "test.sh writes its own reference answer",
    "a link in the work dir to the image's /tmp, and the answer a link through it to "
    "the scratch file where test.sh writes its own reference answer",
]
# The code under test cutting the test runner short: what the runner witness sees.
RUNNER_ROUTES = [
    "the module under test ends its importer with os._exit(0) before any test runs",
    "the module under test registers an exit handler that turns pytest's 1 into 0",
    "the function under test ends the session with pytest.exit(returncode=0)",
    "the function under test skips the tests that call it (pytest.skip)",
    "the module under test writes the reward when the verifier imports it",
]


# What a verifier that joins the agent's network namespace shares with it.
LIVE_VERIFIER_ROUTES = [
    "a line in the agent's /etc/hosts that sends the name a live verifier asks its "
    "reference service by to a fake of the agent's",
]


# Acts that would turn the agent's 0 into an exclusion, or run past the budget.
ZERO_NOT_EXCLUSION_ROUTES = [
    "a planted reward beside links whose targets no stat can answer (longer than "
    "PATH_MAX, a name longer than NAME_MAX)",
    "a planted reward beside 25,000 links in the work dir",
    "the module under test writes a JSON line nested 100,000 deep into the sealed "
    "verifier's record of the test run, then ends its importer with status 0",
    "nothing at all, on a task whose tests wait for the answer and so overrun their "
    "limit on the untouched state",
    "the output a FIFO, on a task whose check takes over half its limit on any state",
]


def test_every_forging_and_red_team_route_has_an_attack() -> None:
    expected = (
        FORGING_ROUTES
        + RED_TEAM_ROUTES
        + HARBOR_FORMAT_ROUTES
        + STATE_AS_DATA_ROUTES
        + RUNNER_ROUTES
        + LINKS_WHERE_USED_ROUTES
        + LIVE_VERIFIER_ROUTES
        + ZERO_NOT_EXCLUSION_ROUTES
    )
    assert sorted(a.route for a in ATTACKS) == sorted(expected)


def test_attack_ids_are_unique() -> None:
    ids = [a.id for a in ATTACKS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_every_attack_is_a_bash_script_against_an_example_task(attack: object) -> None:
    from cleanroom.redteam.catalogue import Attack

    assert isinstance(attack, Attack)
    assert attack.script.startswith("#!/bin/bash\n")
    assert (EXAMPLES / attack.target / "task.toml").is_file()
    assert attack.demonstrated_when


def test_rewards_cleanroom_refuses_and_escapes_to_invalid_are_demonstrated_by_disturbance() -> None:
    disturbed = {a.id for a in ATTACKS if a.demonstration is Demonstration.DISTURBED}

    assert disturbed == {
        "fifo-reward",
        "huge-reward",
        "junk-nan",
        "junk-inf",
        "junk-huge-number",
        "junk-negative",
        "junk-deep-json",
        "junk-huge-int",
        "device-reward",
        "workdir-replaced",
        "trojan-test",
        "symlinked-reward-file",
        # The naive verifier overruns on a task whose tests or check wait.
        "idle-on-waiting-tests",
        "fifo-slow-check",
    }


@pytest.mark.parametrize("attack", [a for a in ATTACKS if a.variant], ids=lambda a: a.id)
def test_an_attack_on_a_variant_lays_files_over_its_target(attack: object, tmp_path: Path) -> None:
    from cleanroom.redteam.assets import variant_task
    from cleanroom.redteam.catalogue import Attack
    from cleanroom.verifiers.container.task import load_task

    assert isinstance(attack, Attack)
    root = variant_task(attack, EXAMPLES / attack.target, tmp_path)

    assert root.name == f"{attack.target}-{attack.variant}"
    task = load_task(root)  # a task as valid as its target
    assert (task.solution_dir / "solve.sh").is_file()
    own = (EXAMPLES / attack.target / "tests" / "test.sh").read_bytes()
    assert (task.tests_dir / "test.sh").read_bytes() != own


@pytest.mark.parametrize("program", ["head", "rm", "test"])
def test_a_trojaned_program_cleared_would_run_is_an_attack_it_holds_against(
    program: str,
) -> None:
    # cleared looks through the archive API, never with the container's own programs.
    attack = by_id(f"trojan-{program}")

    assert attack.cleared is ClearedExpectation.HOLDS
    assert f"/usr/local/bin/{program}" in attack.script


def test_the_background_writer_is_cleared_modes_known_limit() -> None:
    assert by_id("background-writer").cleared is ClearedExpectation.KNOWN_LIMIT


def test_an_unknown_attack_id_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="planted-reward-txt"):
        by_id("nope")


def test_only_the_reader_attack_has_its_demonstration_read_in_the_container() -> None:
    naive = {
        a.id
        for a in ATTACKS
        if options_for(Row(a.target, RowKind.ATTACK, a), Mode.SHARED).in_container_reader
    }
    honest = options_for(Row("csv-report", RowKind.HONEST), Mode.SHARED)

    assert naive == {"trojan-head"}
    assert not honest.in_container_reader
