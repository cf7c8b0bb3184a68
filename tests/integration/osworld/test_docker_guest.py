"""The docker guest against the real daemon, with a tiny busybox container."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cleanroom.core.outcomes import Reason, Status
from cleanroom.guests import DESKTOP_SKELETON, GuestError, GuestTimeout, open_guest
from cleanroom.host_files import NotARegularFile
from cleanroom.verifiers.osworld import check_task, load_task

pytestmark = pytest.mark.docker

Cli = Callable[..., subprocess.CompletedProcess[str]]


def test_home_comes_from_the_container_user(container: Any) -> None:
    with open_guest(f"docker:{container.name}") as guest:
        assert guest.home == "/root"
        assert guest.exec("pwd", shell=True, timeout=10).stdout == b"/root\n"


def test_a_missing_home_is_created_with_the_skeleton_owned_by_the_user(container: Any) -> None:
    with open_guest(f"docker:{container.name}", user="user") as guest:
        listing = guest.exec(["ls", "-ln", "/home/user"], shell=False, timeout=10).stdout.decode()
    names = [line.split()[-1] for line in listing.splitlines()[1:]]
    assert sorted(names) == sorted(DESKTOP_SKELETON)
    assert all(line.split()[2] == "1000" for line in listing.splitlines()[1:])


def test_files_round_trip_and_a_missing_one_is_file_not_found(container: Any) -> None:
    with open_guest(f"docker:{container.name}", user="user") as guest:
        guest.write_file("~/Desktop/a.txt", b"bytes\x00\xff")
        assert guest.read_file("Desktop/a.txt") == b"bytes\x00\xff"
        owner = guest.exec("stat -c %u Desktop/a.txt", shell=True, timeout=10).stdout
        assert owner == b"1000\n"
        with pytest.raises(FileNotFoundError):
            guest.read_file("Desktop/absent.txt")


@pytest.mark.parametrize(
    ("make", "kind"),
    [("mkfifo x", "a fifo"), ("mkdir x", "a directory")],
)
def test_what_is_no_regular_file_reads_as_missing_and_never_blocks(
    container: Any, make: str, kind: str
) -> None:
    with open_guest(f"docker:{container.name}", user="user") as guest:
        guest.exec(f"cd ~/Desktop && rm -rf x && {make}", shell=True, timeout=10)
        with pytest.raises(NotARegularFile, match=kind):
            guest.read_file("Desktop/x")


def test_timeout_kills_the_command_in_the_container(container: Any) -> None:
    with open_guest(f"docker:{container.name}") as guest:
        started = time.monotonic()
        with pytest.raises(GuestTimeout):
            guest.exec("sleep 300", shell=True, timeout=1)
        assert time.monotonic() - started < 10
        procs = guest.exec(["ps", "-o", "args"], shell=False, timeout=10).stdout.decode()
    assert "sleep 300" not in procs


def test_renamed_folder_is_a_success(container: Any, rename_task: Path) -> None:
    with open_guest(f"docker:{container.name}") as guest:
        guest.exec("mkdir -p ~/Desktop/todo_list_Jan_2", shell=True, timeout=10)
        outcome = check_task(load_task(rename_task), guest)
    assert outcome.status is Status.SUCCESS and outcome.score == 1.0


def test_folder_not_renamed_is_a_failure(container: Any, rename_task: Path) -> None:
    with open_guest(f"docker:{container.name}") as guest:
        guest.exec("mkdir -p ~/Desktop/todo_list_Jan_1", shell=True, timeout=10)
        outcome = check_task(load_task(rename_task), guest)
    assert outcome.status is Status.FAILURE and outcome.score == 0.0


def test_stopped_container_is_invalid_not_zero(container: Any, rename_task: Path) -> None:
    with open_guest(f"docker:{container.name}") as guest:
        container.stop(timeout=0)
        outcome = check_task(load_task(rename_task), guest)
    assert outcome.status is Status.INVALID and outcome.reason is Reason.CHECKER_ERROR
    assert "not running" in outcome.detail


def test_removed_container_is_invalid_not_zero(container: Any, rename_task: Path) -> None:
    with open_guest(f"docker:{container.name}") as guest:
        container.remove(force=True)
        outcome = check_task(load_task(rename_task), guest)
    assert outcome.status is Status.INVALID and outcome.reason is Reason.CHECKER_ERROR


def test_opening_a_missing_container_is_a_guest_error(docker_client: Any) -> None:
    with pytest.raises(GuestError, match="not found"):
        open_guest("docker:cleanroom-no-such-container")


def test_cli_on_a_missing_container_exits_2_with_checker_error(
    docker_client: Any, rename_task: Path, cli: Cli
) -> None:
    proc = cli("osworld", "check", str(rename_task), "--guest", "docker:cleanroom-gone", "--json")
    assert proc.returncode == 2
    data = json.loads(proc.stdout)
    assert (data["outcome"], data["reason"]) == ("invalid", "checker_error")


def test_cli_checks_a_container_with_exit_0(container: Any, rename_task: Path, cli: Cli) -> None:
    container.exec_run(["mkdir", "-p", "/root/Desktop/todo_list_Jan_2"])
    proc = cli("osworld", "check", str(rename_task), "--guest", f"docker:{container.name}")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_fresh_is_a_new_container_removed_on_close(container: Any, docker_client: Any) -> None:
    with open_guest(f"docker:{container.name}") as guest:
        guest.exec("touch ~/marker", shell=True, timeout=10)
        fresh = guest.fresh()
        fresh_id = fresh.describe()["id"]
        try:
            assert fresh_id != container.id[:12]
            with pytest.raises(FileNotFoundError):
                fresh.read_file("~/marker")
            network = docker_client.containers.get(fresh_id).attrs["HostConfig"]["NetworkMode"]
            assert network == "none"
        finally:
            fresh.close()
    assert not docker_client.containers.list(all=True, filters={"id": fresh_id})


def test_an_unreachable_daemon_is_a_guest_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(GuestError, match="Docker daemon not reachable"):
        open_guest("docker:anything")
