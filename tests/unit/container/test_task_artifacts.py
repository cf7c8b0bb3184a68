"""task.toml's ``artifacts`` and separate verifier environments, read with Harbor's meaning."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.verifiers.container.task import (
    TaskConfig,
    TaskConfigError,
    load_task,
    parse_task_toml,
)

HERE = Path("/tasks/demo")


def config(text: str) -> TaskConfig:
    return parse_task_toml(text, HERE)[0]


def test_paths_and_tables_are_entries_after_the_conventional_folder() -> None:
    cfg = config('artifacts = ["/app/out.txt", { source = "/srv/x", destination = "x" }]')

    assert [(e.source, e.host_path) for e in cfg.artifact_entries] == [
        ("/logs/artifacts", "logs/artifacts"),
        ("/app/out.txt", "app/out.txt"),
        ("/srv/x", "x"),
    ]


def test_an_entry_naming_the_conventional_folder_replaces_the_implicit_one() -> None:
    cfg = config('artifacts = [{ source = "/logs/artifacts", exclude = ["*.tmp"] }]')

    assert [(e.source, e.exclude) for e in cfg.artifact_entries] == [("/logs/artifacts", ["*.tmp"])]


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ('"/tests/expected.txt"', "/tests"),
        ('"/logs/verifier/reward.txt"', "only /logs/artifacts"),
        ('"/logs"', "only /logs/artifacts"),
        ('"/"', "/tests"),
        ('"out.txt"', "absolute"),
        ('"/app/../tests"', "'..'"),
        ('{ source = "/a", destination = "/abs" }', "relative"),
        ('{ source = "/a", destination = "../up" }', "relative"),
        ('{ source = "/a", destination = "manifest.json" }', "manifest.json"),
        ('{ source = "/a", service = "db" }', "compose service"),
    ],
)
def test_an_artifact_that_would_reach_the_verifiers_places_or_escape_is_refused(
    entry: str, words: str
) -> None:
    with pytest.raises(TaskConfigError, match="artifacts") as caught:
        config(f"artifacts = [{entry}]")
    assert words in str(caught.value)


def test_an_artifact_holding_a_custom_reward_folder_is_refused() -> None:
    with pytest.raises(TaskConfigError, match="reward folder /out"):
        config('artifacts = ["/out"]\n[verifier]\nreward_path = "/out/reward.txt"')


@pytest.mark.parametrize(
    ("text", "separate"),
    [
        ("", False),
        ('[verifier]\nenvironment_mode = "shared"', False),
        ('[verifier]\nenvironment_mode = "separate"', True),
        ("[verifier.environment]\ncpus = 1", True),
    ],
)
def test_the_verifier_is_separate_as_harbor_resolves_it(text: str, separate: bool) -> None:
    assert config(text).verifier.separate is separate


def test_a_separate_verifier_cannot_talk_to_the_agents_processes() -> None:
    with pytest.raises(TaskConfigError, match="live_processes"):
        config('[verifier]\nenvironment_mode = "separate"\nlive_processes = true')


def test_the_verifier_environment_has_the_environment_tables_refusals() -> None:
    with pytest.raises(TaskConfigError, match="GPU"):
        config("[verifier.environment]\ngpus = 1")


@pytest.mark.parametrize(
    ("text", "network"),
    [
        ("[verifier.environment]\ncpus = 1", False),
        ("[verifier.environment]\nallow_internet = true", True),
        ('[verifier.environment]\nnetwork_mode = "public"', True),
        (
            '[verifier]\nnetwork_mode = "no-network"\n'
            "[verifier.environment]\nallow_internet = true",
            False,
        ),
        (
            '[environment]\nnetwork_mode = "public"\n[verifier]\nenvironment_mode = "separate"',
            False,
        ),
    ],
)
def test_a_separate_verifier_has_a_network_only_when_the_task_asks(
    text: str, network: bool
) -> None:
    assert config(text).verifier_network is network


def make_task(root: Path, toml: str, tests_dockerfile: bool) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "tests/test.sh").write_text("true\n")
    if tests_dockerfile:
        (root / "tests/Dockerfile").write_text("FROM scratch\n")
    (root / "environment").mkdir()
    (root / "environment/Dockerfile").write_text("FROM scratch\n")
    (root / "instruction.md").write_text("do it\n")
    (root / "task.toml").write_text(toml)
    return root


@pytest.mark.parametrize(
    ("toml", "tests_dockerfile", "where", "bundled"),
    [
        ('[verifier.environment]\ndocker_image = "grader:1"', True, "image grader:1", True),
        ('[verifier]\nenvironment_mode = "separate"', True, "build tests", True),
        ('[verifier]\nenvironment_mode = "separate"', False, "build environment", False),
    ],
)
def test_the_verifier_image_comes_in_harbors_order(
    tmp_path: Path, toml: str, tests_dockerfile: bool, where: str, bundled: bool
) -> None:
    task = load_task(make_task(tmp_path / "t", toml, tests_dockerfile))

    found = task.verifier_environment()

    assert found is not None
    built = found.build_dir.name if found.build_dir is not None else None
    got = f"image {found.image}" if found.image else f"build {built}"
    assert (got, found.bundled_tests) == (where, bundled)


def test_a_compose_verifier_environment_is_refused_by_name(tmp_path: Path) -> None:
    root = make_task(tmp_path / "t", '[verifier]\nenvironment_mode = "separate"', False)
    (root / "tests/docker-compose.yaml").write_text("services: {}\n")

    with pytest.raises(TaskConfigError, match=r"docker-compose\.yaml"):
        load_task(root)
