"""task.toml: typed, defaulted, strict about what it knows and candid about what it keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.redteam.run_matrix import EXAMPLE_TASK_NAMES, HARBOR_FORMAT_EXAMPLES
from cleanroom.verifiers.container.task import (
    DEFAULT_REWARD_PATH,
    TaskConfigError,
    TaskLayoutError,
    TemplateError,
    load_task,
    parse_task_toml,
    resolve_env,
    rewrite_base_images,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"
HERE = Path("/tasks/demo")


def test_an_empty_file_gives_harbor_defaults() -> None:
    config, warnings = parse_task_toml("", HERE)

    assert config.verifier.reward_path == DEFAULT_REWARD_PATH
    assert config.verifier.reward_json_path == "/logs/verifier/reward.json"
    assert config.verifier.user == "0"
    assert config.agent_network is True  # Harbor: public unless the task says otherwise
    assert config.verifier_network is False
    assert config.verifier.live_processes is False
    assert warnings == []


def test_every_documented_key_is_read() -> None:
    text = """
[agent]
timeout_sec = 30
user = "agent"

[verifier]
timeout_sec = 12.5
user = "tester"
env = { MODE = "strict" }
reward_path = "/out/score.txt"
result_paths = ["/work/tail.json"]
setup_commands = ["/opt/start.sh"]
live_processes = true

[environment]
network = true
memory = "2G"
cpus = 1.5
pids_limit = 64
workdir = "/app"
"""
    config, _ = parse_task_toml(text, HERE)

    assert (config.agent.timeout_sec, config.agent.user) == (30, "agent")
    v = config.verifier
    assert (v.timeout_sec, v.user, v.env) == (12.5, "tester", {"MODE": "strict"})
    assert v.reward_paths == ("/out/score.json", "/out/score.txt")
    assert v.reward_dir == "/out"
    assert (v.result_paths, v.setup_commands, v.live_processes) == (
        ["/work/tail.json"],
        ["/opt/start.sh"],
        True,
    )
    e = config.environment
    assert (e.network, e.memory_limit_mb, e.cpus, e.pids_limit, e.workdir) == (
        True,
        2048,
        1.5,
        64,
        "/app",
    )


def test_malformed_toml_is_an_error_naming_the_line() -> None:
    text = '[agent]\ntimeout_sec = 30\n\n[verifier\nuser = "x"\n'

    with pytest.raises(TaskConfigError) as caught:
        parse_task_toml(text, HERE)

    assert caught.value.line == 4
    assert "line 4" in str(caught.value)


def test_a_wrong_value_is_an_error_naming_its_line_and_key() -> None:
    text = '[agent]\nuser = "a"\n\n[verifier]\nuser = "t"\ntimeout_sec = "soon"\n'

    with pytest.raises(TaskConfigError) as caught:
        parse_task_toml(text, HERE)

    assert caught.value.line == 6
    assert "verifier.timeout_sec" in str(caught.value)


def test_a_bad_list_item_points_at_its_key() -> None:
    text = '[verifier]\nresult_paths = ["relative/path"]\n'

    with pytest.raises(TaskConfigError) as caught:
        parse_task_toml(text, HERE)

    assert caught.value.line == 2
    assert "absolute" in str(caught.value)


def test_unknown_keys_are_kept_and_warned_about_with_their_line() -> None:
    text = "schema = 2\n\n[verifier]\ntimeout_sec = 5\nflaky_retries = 3\n\n[extras]\nx = 1\n"

    config, warnings = parse_task_toml(text, HERE)

    assert config.verifier.model_extra == {"flaky_retries": 3}
    assert config.model_extra == {"schema": 2, "extras": {"x": 1}}
    assert {str(w) for w in warnings} == {
        "line 1: unknown key schema (kept)",
        "line 5: unknown key verifier.flaky_retries (kept)",
        "line 7: unknown key extras (kept)",
    }


@pytest.mark.parametrize(
    "reward_path", ["logs/reward.txt", "/reward.txt", "/logs/../etc/reward.txt"]
)
def test_a_reward_path_must_be_absolute_and_inside_its_own_folder(reward_path: str) -> None:
    with pytest.raises(TaskConfigError, match="reward_path"):
        parse_task_toml(f'[verifier]\nreward_path = "{reward_path}"\n', HERE)


def test_memory_accepts_harbor_style_units() -> None:
    config, _ = parse_task_toml('[environment]\nmemory = "512M"\n', HERE)

    assert config.environment.memory_limit_mb == 512


def test_a_folder_without_tests_is_not_a_task(tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_text("")
    (tmp_path / "instruction.md").write_text("do it")
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "Dockerfile").write_text("FROM scratch\n")

    with pytest.raises(TaskLayoutError, match=r"tests/test\.sh"):
        load_task(tmp_path)


ALL_EXAMPLES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "task.toml").is_file())


def test_the_red_team_matrix_runs_every_example_but_the_task_format_ones() -> None:
    assert set(ALL_EXAMPLES) == set(EXAMPLE_TASK_NAMES) | set(HARBOR_FORMAT_EXAMPLES)


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_every_example_task_loads_cleanly(name: str) -> None:
    task = load_task(EXAMPLES / name)

    assert task.warnings == ()
    solutions = [s.solution_dir for s in task.steps] or [task.solution_dir]
    assert all((folder / "solve.sh").is_file() for folder in solutions)


@pytest.mark.parametrize("path", ["/", "/tests", "/tests/x", "/logs", "/logs/verifier"])
def test_state_cannot_hand_the_verifiers_own_places_to_the_agent(path: str) -> None:
    with pytest.raises(TaskConfigError, match="verifier's own places") as caught:
        parse_task_toml(f'[verifier]\nstate = ["{path}"]\n', HERE)

    assert caught.value.line == 2


def test_declared_state_is_kept_as_absolute_paths() -> None:
    config, _ = parse_task_toml('[verifier]\nstate = ["/etc/greet", "/usr/bin/greet"]\n', HERE)

    assert config.verifier.state == ["/etc/greet", "/usr/bin/greet"]
    assert config.verifier.state_cap_mb == 1024


def test_a_state_path_that_only_begins_like_a_verifier_place_is_allowed() -> None:
    config, _ = parse_task_toml('[verifier]\nstate = ["/logstash", "/testsuite"]\n', HERE)

    assert config.verifier.state == ["/logstash", "/testsuite"]


def test_env_templates_follow_harbor() -> None:
    env = {"LIT": "plain ${NOT_WHOLE}", "SET": "${HOST_A}", "DEF": "${MISSING:-fallback}"}
    resolved = resolve_env(env, {"HOST_A": "from-host"}, "verifier.env")
    assert resolved == {"LIT": "plain ${NOT_WHOLE}", "SET": "from-host", "DEF": "fallback"}
    # A set variable wins over the default, even when empty.
    assert resolve_env({"X": "${E:-d}"}, {"E": ""}, "x") == {"X": ""}


def test_an_unset_template_without_default_names_key_and_variable() -> None:
    with pytest.raises(TemplateError, match=r"solution\.env\.TOKEN: .*NO_SUCH_VAR"):
        resolve_env({"TOKEN": "${NO_SUCH_VAR}"}, {}, "solution.env")


def test_base_images_are_rewritten_by_the_map_only_where_named() -> None:
    dockerfile = (
        "FROM python:3.12-slim AS build\nRUN echo FROM python:3.12-slim\n"
        "from --platform=linux/amd64 debian:bookworm\nFROM other\n"
    )
    out = rewrite_base_images(
        dockerfile, {"python:3.12-slim": "local/py", "debian:bookworm": "local/deb"}
    )
    assert out == (
        "FROM local/py AS build\nRUN echo FROM python:3.12-slim\n"
        "from --platform=linux/amd64 local/deb\nFROM other\n"
    )


def test_a_task_with_a_prebuilt_image_needs_no_dockerfile(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test.sh").write_text("true\n")
    (tmp_path / "instruction.md").write_text("do it\n")
    (tmp_path / "task.toml").write_text("")
    with pytest.raises(TaskLayoutError, match="docker_image"):
        load_task(tmp_path)
    (tmp_path / "task.toml").write_text('[environment]\ndocker_image = "debian:bookworm"\n')
    task = load_task(tmp_path)
    assert task.dockerfile is None


def test_network_precedence_follows_harbor() -> None:
    def agent_net(text: str) -> bool:
        return parse_task_toml(text, HERE)[0].agent_network

    assert agent_net("[environment]\nallow_internet = true") is True
    assert agent_net('[environment]\nallow_internet = true\nnetwork_mode = "no-network"') is False
    assert agent_net('[environment]\nnetwork_mode = "public"') is True
    assert agent_net("[environment]\nnetwork = true") is True
    assert agent_net('[environment]\nnetwork = true\n[agent]\nnetwork_mode = "no-network"') is False


def test_memory_and_memory_mb_must_agree() -> None:
    with pytest.raises(TaskConfigError, match="disagree"):
        parse_task_toml('[environment]\nmemory = "1G"\nmemory_mb = 512', HERE)


OWN_UNDER_METADATA = """
[metadata.cleanroom.verifier]
live_processes = true
state = ["/srv/data"]
setup_commands = ["/opt/start.sh"]

[metadata.cleanroom.environment]
pids_limit = 64
"""


def test_cleanrooms_own_keys_are_read_under_metadata_cleanroom_without_a_warning() -> None:
    config, warnings = parse_task_toml(OWN_UNDER_METADATA, HERE)

    assert config.verifier.live_processes is True
    assert config.verifier.state == ["/srv/data"]
    assert config.verifier.setup_commands == ["/opt/start.sh"]
    assert config.environment.pids_limit == 64
    assert warnings == []


@pytest.mark.parametrize(
    ("text", "line", "said"),
    [
        ("[metadata.cleanroom.verifier]\ntimeout_sec = 5\n", 2, "not a key of cleanroom's own"),
        ("[metadata.cleanroom.agent]\nx = 1\n", 1, "not a table cleanroom reads"),
        ("[metadata]\ncleanroom = 3\n", 2, "metadata.cleanroom: a table"),
        (
            "[verifier]\nlive_processes = true\n[metadata.cleanroom.verifier]\n"
            "live_processes = false\n",
            4,
            "also set in [verifier]",
        ),
    ],
)
def test_a_wrong_own_key_under_metadata_is_an_error_naming_its_line(
    text: str, line: int, said: str
) -> None:
    with pytest.raises(TaskConfigError) as raised:
        parse_task_toml(text, HERE)

    assert raised.value.line == line
    assert said in str(raised.value)
