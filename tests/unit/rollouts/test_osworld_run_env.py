"""`RunDesktopEnv` is built from a run's connection file with OSWorld's arguments, and
refuses by name what cannot mean anything for that run (the episodes themselves are
driven in tests/integration/harness/test_osworld_runner_in_windows.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.environments.policy.http import env_key
from cleanroom.rollouts.osworld_outside import write_connection
from cleanroom.rollouts.osworld_provider import UnsupportedArgument
from cleanroom.rollouts.osworld_run_env import RunDesktopEnv

KEY = "harness-key"


def _run(tmp_path: Path, **served: object) -> Path:
    served = {"vm_address": "127.0.50.3", "screen": (1920, 1080), **served}
    write_connection(tmp_path, "http://127.0.0.1:1", KEY, ["env01", "env02"], **served)  # type: ignore[arg-type]
    return tmp_path


@pytest.mark.parametrize("given", ["folder", "file"])
def test_the_run_folder_or_its_connection_file_gives_the_environments_vm_ip(
    tmp_path: Path, given: str
) -> None:
    run = _run(tmp_path)
    where = run if given == "folder" else run / "osworld-agents.json"
    env = RunDesktopEnv(path_to_vm="env02", screen_size=(1920, 1080), run=where)
    try:
        assert env.vm_ip == f"env02:{env_key(KEY, 'env02')}@127.0.50.3"
        assert env.controller.vm_ip == env.vm_ip and env.server_port == 5000
        assert (env.screen_width, env.screen_height) == (1920, 1080)
    finally:
        env.close()


def test_a_screen_size_other_than_the_runs_is_refused_with_the_option_to_start_it_so(
    tmp_path: Path,
) -> None:
    with pytest.raises(UnsupportedArgument) as refused:
        RunDesktopEnv(path_to_vm="env01", screen_size=(1280, 800), run=_run(tmp_path))
    assert refused.value.name == "screen_size" and "--screen 1280x800" in str(refused.value)


@pytest.mark.parametrize("vm", ["env00", "env03", None])
def test_an_environment_the_run_serves_no_agent_is_refused(tmp_path: Path, vm: str | None) -> None:
    with pytest.raises(UnsupportedArgument) as refused:
        RunDesktopEnv(path_to_vm=vm, screen_size=(1920, 1080), run=_run(tmp_path))
    assert refused.value.name == "path_to_vm" and "env01" in str(refused.value)


def test_a_run_that_serves_no_in_vm_server_is_refused(tmp_path: Path) -> None:
    run = _run(tmp_path, vm_address=None, screen=None)
    with pytest.raises(UnsupportedArgument) as refused:
        RunDesktopEnv(path_to_vm="env01", screen_size=(1920, 1080), run=run)
    assert refused.value.name == "run"


def test_osworlds_arguments_that_mean_nothing_here_are_refused_by_name(tmp_path: Path) -> None:
    run = _run(tmp_path)
    with pytest.raises(UnsupportedArgument) as provider:
        RunDesktopEnv(provider_name="vmware", path_to_vm="env01", run=run)
    with pytest.raises(UnsupportedArgument) as nowhere:
        RunDesktopEnv(path_to_vm="env01", screen_size=(1920, 1080))
    assert (provider.value.name, nowhere.value.name) == ("provider_name", "run")
