"""One task model where Harbor is installed: the example tasks and Harbor-style task
folders (malformed ones among them) read by cleanroom's own model (the core, here in
.venv) and by the Harbor-side loader (`integrations.harbor_task`: Harbor's own model,
mapped into cleanroom's; run in .venv-harbor by task_models.py) give the same verdict and
the same fields, except where docs/harbor-run.md says they differ (`DIFFERENCES`).

Also: cleanroom's own keys under ``[metadata.cleanroom]`` make neither Harbor's loader
nor inspect-harbor warn, and in the sections themselves inspect-harbor warns about them,
as docs/harbor.md says. No container is started.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cleanroom.verifiers.container.task import TaskError, load_task

from .task_models import effective

REPO = Path(__file__).resolve().parents[3]
PYTHON = REPO / ".venv-harbor" / "bin" / "python"
RUNNER = Path(__file__).with_name("task_models.py")
EXAMPLES = sorted(p for p in (REPO / "examples" / "tasks").iterdir() if p.is_dir())

# cleanroom's own keys, where Harbor's tools keep free-form data.
OWN_KEYS_IN_METADATA = """
[metadata.cleanroom.verifier]
reward_path = "/logs/out/reward.txt"
result_paths = ["/app/result.json"]
setup_commands = ["true"]
state = ["/usr/local/bin/tool"]
state_cap_mb = 64

[metadata.cleanroom.environment]
network = false
pids_limit = 64
"""

# Harbor-style task.toml files, each in a folder with the single-step layout.
FIXTURES: dict[str, str] = {
    "harbor-fields": """
schema_version = "1.4"
source = "somewhere"
[task]
name = "org/demo"
authors = [{ name = "A. Author", email = "a@example.org" }]
keywords = ["k"]
[agent]
timeout_sec = 30
user = 1000
network_mode = "no-network"
[verifier]
timeout_sec = 20
user = 0
environment_mode = "shared"
network_mode = "public"
env = { A = "${A:-x}" }
[environment]
network_mode = "public"
os = "Linux"
gpus = 0
cpus = 2.0
memory_mb = 1024
docker_image = "debian:bookworm"
workdir = "/app"
[environment.healthcheck]
command = "true"
retries = 2
[solution]
env = { B = "b" }
""",
    "legacy-names": """
version = "1.0"
[environment]
memory = "1G"
storage = "10G"
allow_internet = false
""",
    "own-keys-in-metadata": OWN_KEYS_IN_METADATA,
    "own-keys-in-sections": """
[verifier]
reward_path = "/logs/out/reward.txt"
live_processes = true
[environment]
network = false
pids_limit = 64
""",
    "unknown-keys": """
colour = "blue"
[verifier]
flavour = "strong"
[environment]
shape = "round"
""",
    "unknown-keys-in-lists": """
artifacts = [{ source = "/app/out.txt", colour = "blue" }]
[[verifier.collect]]
command = "true"
mood = "calm"
""",
    "unknown-keys-in-steps": """
[[steps]]
name = "a"
shape = "round"
[steps.verifier]
flavour = "strong"
""",
    "artifacts-and-collect": """
artifacts = ["/app/out.txt", { source = "/data", destination = "d", exclude = ["*.tmp"] }]
[[verifier.collect]]
command = "true"
timeout_sec = 5
""",
    "verifier-environment-of-its-own": """
[verifier]
environment_mode = "separate"
[verifier.environment]
cpus = 1
memory = "512M"
""",
    "mcp-server": """
[[environment.mcp_servers]]
name = "docs"
url = "http://docs.invalid/mcp"
""",
    # Malformed: both refuse.
    "not-toml": "[verifier\ntimeout_sec = 1\n",
    "timeout-not-a-number": '[verifier]\ntimeout_sec = "soon"\n',
    "cpus-not-a-number": '[environment]\ncpus = "two"\n',
    "task-name-without-org": '[task]\nname = "demo"\n',
    "shared-with-own-environment": (
        '[verifier]\nenvironment_mode = "shared"\n[verifier.environment]\ncpus = 1\n'
    ),
    "steps-that-share-a-folder": '[[steps]]\nname = "a"\n[[steps]]\nname = "A"\n',
    "step-name-with-a-colon": '[[steps]]\nname = "a:b"\n',
    "memory-and-memory-mb-disagree": '[environment]\nmemory = "1G"\nmemory_mb = 512\n',
    "unknown-own-key": "[metadata.cleanroom.verifier]\ncolour = 1\n",
    "own-key-set-twice": (
        "[environment]\nnetwork = false\n[metadata.cleanroom.environment]\nnetwork = true\n"
    ),
    # Harbor accepts, cleanroom refuses what it cannot run: both refuse under Harbor.
    "gpus": "[environment]\ngpus = 1\n",
    "allowlist": '[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n',
    "windows": '[environment]\nos = "windows"\n',
    "zero-timeout": "[verifier]\ntimeout_sec = 0\n",
    # Where the two models disagree (DIFFERENCES).
    "mcp-server-without-url": '[[environment.mcp_servers]]\nname = "docs"\n',
    "memory-in-gb": '[environment]\nmemory = "2GB"\n',
    "storage-mb-as-text": '[environment]\nstorage_mb = "10G"\n',
    "memory-as-a-number": "[environment]\nmemory = 512\n",
}

# Files where cleanroom's own model and Harbor's disagree, and what each says: "refused"
# or "accepted" for the core (.venv) and under Harbor. docs/harbor-run.md lists them.
DIFFERENCES: dict[str, tuple[str, str]] = {
    # Harbor checks the agent's MCP servers, which no verifier uses: a server over HTTP
    # needs a url.
    "mcp-server-without-url": ("accepted", "refused"),
    # Harbor reads sizes ending in G, M or K only; cleanroom's own model also reads
    # 2GB, 512Mi and the like.
    "memory-in-gb": ("accepted", "refused"),
    # Harbor's storage_mb is a number; cleanroom keeps any size, which neither enforces.
    "storage-mb-as-text": ("accepted", "refused"),
    # Harbor drops a memory that is not text (no limit); cleanroom's own model refuses it.
    "memory-as-a-number": ("refused", "accepted"),
}

SINGLE_STEP_FILES = {
    "instruction.md": "Do it.\n",
    "tests/test.sh": "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
    "environment/Dockerfile": "FROM debian:bookworm\n",
}


def _task_folder(root: Path, name: str, toml: str) -> Path:
    folder = root / name
    files = {**SINGLE_STEP_FILES, "task.toml": toml}
    for step in ("a", "A", "a:b"):
        if f'name = "{step}"' in toml:
            files |= {f"steps/{step}/instruction.md": "Do it.\n", f"steps/{step}/tests/test.sh": ""}
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every folder compared: the example tasks and the fixtures, by name."""
    root = tmp_path_factory.mktemp("harbor-style")
    made = {name: _task_folder(root, name, toml) for name, toml in FIXTURES.items()}
    assert not set(made) & {p.name for p in EXAMPLES}, "a fixture named as an example task"
    return {**{p.name: p for p in EXAMPLES}, **made}


@pytest.fixture(scope="module")
def under_harbor(folders: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """task_models.py's line for each folder, by name (see its docstring)."""
    if not PYTHON.is_file():
        pytest.fail("no .venv-harbor with Harbor: run `make setup` (needs Python 3.12+)")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    done = subprocess.run(
        [str(PYTHON), str(RUNNER), *map(str, folders.values())],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return dict(zip(folders, lines, strict=True))


def core_reading(folder: Path) -> dict[str, Any]:
    """cleanroom's own model's reading of ``folder``, as task_models.py shows Harbor's."""
    try:
        task = load_task(folder)
    except TaskError as exc:
        return {"error": str(exc)}
    return {"config": effective(task.config), "warnings": [str(w) for w in task.warnings]}


def verdict(reading: dict[str, Any]) -> str:
    return "refused" if "error" in reading else "accepted"


@pytest.mark.parametrize("name", [p.name for p in EXAMPLES])
def test_an_example_task_reads_the_same_with_and_without_harbor(
    name: str, folders: dict[str, Path], under_harbor: dict[str, dict[str, Any]]
) -> None:
    line = under_harbor[name]
    assert line["harbor"] is None
    assert line["mapped"] == core_reading(folders[name])


@pytest.mark.parametrize("name", sorted(set(FIXTURES) - set(DIFFERENCES)))
def test_a_harbor_style_file_gets_the_same_verdict_and_fields_under_harbor(
    name: str, folders: dict[str, Path], under_harbor: dict[str, dict[str, Any]]
) -> None:
    core, mapped = core_reading(folders[name]), under_harbor[name]["mapped"]
    assert verdict(mapped) == verdict(core), (core, mapped)
    if "config" in core:
        assert mapped == core


@pytest.mark.parametrize("name", sorted(DIFFERENCES))
def test_where_the_models_disagree_each_says_what_the_docs_say(
    name: str, folders: dict[str, Path], under_harbor: dict[str, dict[str, Any]]
) -> None:
    line = under_harbor[name]
    assert (verdict(core_reading(folders[name])), verdict(line["mapped"])) == DIFFERENCES[name]
    # Under Harbor, Harbor's model decides: cleanroom refuses nothing Harbor reads here.
    assert (line["harbor"] is None) == ("error" not in line["mapped"])


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_what_harbor_refuses_is_refused_under_harbor(
    name: str, under_harbor: dict[str, dict[str, Any]]
) -> None:
    line = under_harbor[name]
    if line["harbor"] is not None:
        assert "error" in line["mapped"]


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_a_task_refused_under_harbor_is_invalid_not_scored(
    name: str, folders: dict[str, Path], under_harbor: dict[str, dict[str, Any]]
) -> None:
    line = under_harbor[name]
    if "error" not in line["mapped"]:
        return
    outcome = line["outcome"]
    assert (outcome["outcome"], outcome["reason"]) == ("invalid", "environment_error")
    assert str(folders[name]) in outcome["detail"]


def test_a_value_harbor_refuses_is_named_with_its_line(
    under_harbor: dict[str, dict[str, Any]],
) -> None:
    error = under_harbor["timeout-not-a-number"]["mapped"]["error"]
    assert "task.toml, line 2: verifier.timeout_sec" in error


def test_a_file_that_is_not_toml_is_named_with_its_line(
    under_harbor: dict[str, dict[str, Any]],
) -> None:
    assert "task.toml, line 1: not valid TOML" in under_harbor["not-toml"]["mapped"]["error"]


def test_harbors_migrations_are_read_with_harbors_meaning(
    under_harbor: dict[str, dict[str, Any]],
) -> None:
    config = under_harbor["legacy-names"]["mapped"]["config"]
    assert config["schema_version"] == "1.0"
    assert config["environment"]["memory_mb"] == 1024
    assert config["environment"]["network_public"] is False


def test_own_keys_in_the_sections_are_read_under_harbor_too(
    under_harbor: dict[str, dict[str, Any]],
) -> None:
    # Harbor's model ignores them; they are handed to cleanroom's beside Harbor's values.
    config = under_harbor["own-keys-in-sections"]["mapped"]["config"]
    assert config["verifier"]["reward_path"] == "/logs/out/reward.txt"
    assert config["verifier"]["live_processes"] is True
    assert config["environment"]["pids_limit"] == 64
    assert config["environment"]["network_public"] is False


def test_unknown_keys_warn_under_harbor_as_without_it(
    under_harbor: dict[str, dict[str, Any]],
) -> None:
    assert under_harbor["unknown-keys"]["mapped"]["warnings"] == [
        "line 2: unknown key colour (kept)",
        "line 4: unknown key verifier.flavour (kept)",
        "line 6: unknown key environment.shape (kept)",
    ]


@pytest.mark.parametrize("name", [p.name for p in EXAMPLES] + ["own-keys-in-metadata"])
def test_own_keys_in_metadata_warn_neither_in_harbor_nor_in_inspect_harbor(
    name: str, under_harbor: dict[str, dict[str, Any]]
) -> None:
    line = under_harbor[name]
    assert line["harbor_warnings"] == []
    assert line["inspect_harbor_warnings"] == []


def test_own_keys_in_the_sections_make_inspect_harbor_warn(
    under_harbor: dict[str, dict[str, Any]],
) -> None:
    # What docs/harbor.md says: in the sections, inspect-harbor does not know them.
    warned = " ".join(under_harbor["own-keys-in-sections"]["inspect_harbor_warnings"])
    assert "live_processes" in warned and "pids_limit" in warned
    assert under_harbor["own-keys-in-sections"]["harbor_warnings"] == []
