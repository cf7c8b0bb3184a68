"""Every field of the pinned Harbor release's task model is read or refused by name.

The field list (tests/data/harbor/task-fields.json) is made from an installed Harbor by
scripts/harbor_task_fields.py; a new release's list shows at once which fields are new.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import (
    HARBOR_FIELDS,
    TaskConfigError,
    harbor_field_status,
    parse_task_toml,
)
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_path

FIELDS_FILE = Path(__file__).resolve().parents[2] / "data" / "harbor" / "task-fields.json"
DATA = json.loads(FIELDS_FILE.read_text(encoding="utf-8"))
HERE = Path("/tasks/demo")

# For each refused entry of HARBOR_FIELDS, a task.toml that sets it the way Harbor would.
REFUSING = {
    "agent.allowed_hosts": '[agent]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]',
    "verifier.allowed_hosts": '[verifier]\nnetwork_mode = "allowlist"\nallowed_hosts = ["a.b"]',
    "verifier.environment.allowed_hosts": '[verifier.environment]\nallowed_hosts = ["a.b"]',
    "verifier.environment.gpu_types": '[verifier.environment]\ngpu_types = ["H100"]',
    "verifier.environment.tpu": '[verifier.environment.tpu]\ntype = "v6e"\ntopology = "2x4"',
    "environment.allowed_hosts": '[environment]\nallowed_hosts = ["pypi.org"]',
    "environment.gpu_types": '[environment]\ngpu_types = ["H100"]',
    "environment.tpu": '[environment.tpu]\ntype = "v6e"\ntopology = "2x4"',
    "steps.agent.allowed_hosts": ('[[steps]]\nname = "a"\n[steps.agent]\nallowed_hosts = ["a.b"]'),
    "steps.verifier.allowed_hosts": (
        '[[steps]]\nname = "a"\n[steps.verifier]\nallowed_hosts = ["a.b"]'
    ),
    "steps.verifier.environment": ('[[steps]]\nname = "a"\n[steps.verifier.environment]\ncpus = 1'),
    "steps.verifier.collect": (
        '[[steps]]\nname = "a"\n[[steps.verifier.collect]]\ncommand = "true"'
    ),
    "steps.healthcheck": '[[steps]]\nname = "a"\n[steps.healthcheck]\ncommand = "true"',
    "steps.artifacts": '[[steps]]\nname = "a"\nartifacts = ["/app/out.txt"]',
}
# Read fields whose values outside what cleanroom runs are refused, with such a value.
REFUSED_VALUES = {
    "agent.network_mode": ('[agent]\nnetwork_mode = "allowlist"', "allowlist"),
    "verifier.environment": (
        '[verifier]\nenvironment_mode = "shared"\n[verifier.environment]\ncpus = 1',
        "incompatible",
    ),
    "artifacts": ('artifacts = [{ source = "/data", service = "db" }]', "compose service"),
    "environment.network_mode": ('[environment]\nnetwork_mode = "allowlist"', "allowlist"),
    "environment.os": ('[environment]\nos = "windows"', "Windows"),
    "environment.gpus": ("[environment]\ngpus = 1", "GPUs"),
    "steps.agent.network_mode": (
        '[environment]\nnetwork_mode = "no-network"\n[[steps]]\nname = "a"\n'
        '[steps.agent]\nnetwork_mode = "public"',
        "keeps one network",
    ),
    "steps.verifier.environment_mode": (
        '[[steps]]\nname = "a"\n[steps.verifier]\nenvironment_mode = "separate"',
        "separate",
    ),
}


def test_the_field_list_names_its_source_and_licence() -> None:
    assert DATA["source"].startswith("harbor==0.26.")
    assert "Apache" in DATA["licence"]
    assert len(DATA["fields"]) > 100


@pytest.mark.parametrize("field", [f["field"] for f in DATA["fields"]] + DATA["legacy_keys"])
def test_every_harbor_field_is_read_or_refused(field: str) -> None:
    assert harbor_field_status(field) is not None, (
        f"{field} (Harbor 0.26) is neither read nor refused: add it to HARBOR_FIELDS"
    )


def test_every_refused_field_has_a_refusing_example() -> None:
    refused = {k for k, v in HARBOR_FIELDS.items() if v.startswith("refused")}
    assert refused == set(REFUSING)


@pytest.mark.parametrize("field", sorted(REFUSING))
def test_a_refused_field_is_an_error_naming_it(field: str) -> None:
    with pytest.raises(TaskConfigError) as caught:
        parse_task_toml(REFUSING[field], HERE)
    message = str(caught.value)
    assert "not supported by cleanroom" in message
    named = field.split(".")[-1]
    assert named in message or field.split(".")[0] in message


@pytest.mark.parametrize("field", sorted(REFUSED_VALUES))
def test_a_value_cleanroom_cannot_run_is_refused_by_name(field: str) -> None:
    text, word = REFUSED_VALUES[field]
    with pytest.raises(TaskConfigError) as caught:
        parse_task_toml(text, HERE)
    assert word in str(caught.value)
    assert field.split(".")[-1] in str(caught.value) or field.split(".")[0] in str(caught.value)


def test_the_values_cleanroom_runs_are_accepted() -> None:
    text = """
schema_version = "1.4"
source = "somewhere"
[task]
name = "org/demo"
authors = [{ name = "A. Author", email = "a@example.org" }]
keywords = ["k"]
[agent]
user = 1000
network_mode = "no-network"
[verifier]
user = 0
environment_mode = "shared"
network_mode = "public"
[environment]
network_mode = "public"
os = "Linux"
gpus = 0
cpus = 2.0
memory = "1G"
memory_mb = 1024
docker_image = "debian:bookworm"
env = { A = "${A:-x}" }
[environment.healthcheck]
command = "true"
[solution]
env = { B = "b" }
"""
    config, warnings = parse_task_toml(text, HERE)
    assert warnings == []
    assert (config.agent.user, config.verifier.user) == ("1000", "0")
    assert config.agent_network is False  # the agent's own network_mode wins
    assert config.verifier_network is True
    assert config.environment.healthcheck is not None
    assert config.environment.healthcheck.retries == 3
    assert config.task is not None and config.task.name == "org/demo"


def test_a_refused_field_makes_the_rollout_an_environment_error(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test.sh").write_text("true\n")
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "instruction.md").write_text("do it\n")
    (tmp_path / "task.toml").write_text('[environment]\ngpu_types = ["H100"]\n')

    def no_daemon() -> DockerRuntime:
        raise AssertionError("a refused task must not reach Docker")

    outcome = verify_path(tmp_path, AgentSpec.noop(), VerifyOptions(), connect=no_daemon)
    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.ENVIRONMENT_ERROR)
    assert "gpu_types" in outcome.detail and "line 2" in outcome.detail


@pytest.mark.parametrize("setting", ["storage_mb = 10240", 'storage = "10G"'])
def test_a_disk_size_is_kept_as_harbors_docker_environment_keeps_it(setting: str) -> None:
    parse_task_toml(f"[environment]\n{setting}", HERE)  # no error: many public tasks set it


def test_a_skills_folder_is_read_with_harbor_s_meaning() -> None:
    # A folder inside the environment that Harbor hands the agent; no verifier reads it.
    config, _ = parse_task_toml('[environment]\nskills_dir = "/runtime/skills"', HERE)
    assert config.environment.skills_dir == "/runtime/skills"
    with pytest.raises(TaskConfigError, match="absolute path"):
        parse_task_toml('[environment]\nskills_dir = "skills"', HERE)


def test_mcp_servers_are_read_with_harbor_s_meaning() -> None:
    # Servers Harbor hands the agent; no verifier talks to them.
    toml = '[[environment.mcp_servers]]\nname = "m"\nurl = "http://x"'
    config, _ = parse_task_toml(toml, HERE)
    assert [s["name"] for s in config.environment.mcp_servers] == ["m"]
    with pytest.raises(TaskConfigError, match="table with a name"):
        parse_task_toml('[[environment.mcp_servers]]\nurl = "http://x"', HERE)
