"""The Docker layer: one translation of the daemon's failures, one exec, shared primitives.

A scripted stand-in for the SDK plays each failure (a missing container, a refusal, a
daemon that does not answer, a stream that breaks); the real daemon is exercised by the
integration tests of the guests, the container verifier and the containers mode.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import docker.errors
import pytest
import requests

from cleanroom import docker_layer
from cleanroom.docker_layer import Docker, DockerError, ImageBuildFailed, _split_tag, translated
from cleanroom.environments.containers.desktop_image import DockerUnavailable
from cleanroom.environments.errors import PoolError
from cleanroom.guests.base import GuestError
from cleanroom.guests.docker import ContainerUnavailable
from cleanroom.verifiers.container.runtime import RuntimeUnavailable

Frames = Iterator[tuple[bytes | None, bytes | None]]


def _api_error(status: int, explanation: str) -> docker.errors.APIError:
    response = requests.Response()
    response.status_code = status
    return docker.errors.APIError("refused", response=response, explanation=explanation)


# -- one translation ----------------------------------------------------------------------


def test_a_missing_object_is_the_callers_error_with_status_404() -> None:
    with pytest.raises(DockerError) as caught, translated("inspecting abc"):
        raise docker.errors.NotFound("404", explanation="No such container: abc")
    assert caught.value.status == 404
    assert str(caught.value) == "inspecting abc: not found (No such container: abc)"


def test_a_refused_call_carries_the_daemons_status_and_explanation() -> None:
    with pytest.raises(DockerError) as caught, translated("running sh in abc"):
        raise _api_error(409, "container abc is not running")
    assert caught.value.status == 409
    assert str(caught.value) == "running sh in abc: container abc is not running"


@pytest.mark.parametrize(
    "failure",
    [
        requests.exceptions.ConnectionError("refused"),
        docker.errors.DockerException("Error while fetching server API version"),
    ],
)
def test_a_daemon_that_does_not_answer_has_no_status(failure: Exception) -> None:
    with pytest.raises(DockerError) as caught, translated("connecting"):
        raise failure
    assert caught.value.status is None
    assert "connecting: Docker daemon not reachable" in str(caught.value)


def test_a_failure_that_is_not_dockers_passes_through() -> None:
    with pytest.raises(KeyError), translated("reading"):
        raise KeyError("Id")


@pytest.mark.parametrize(
    ("error", "domain"),
    [
        (ContainerUnavailable, GuestError),
        (RuntimeUnavailable, RuntimeUnavailable),
        (DockerUnavailable, PoolError),
    ],
)
def test_each_caller_gets_its_own_error_with_the_status(
    error: type[DockerError], domain: type[Exception]
) -> None:
    with pytest.raises(domain) as caught, translated("pausing abc", error):
        raise docker.errors.NotFound("404", explanation="No such container: abc")
    assert isinstance(caught.value, error)
    assert caught.value.status == 404  # type: ignore[attr-defined]


# -- a stand-in for the SDK ---------------------------------------------------------------


class _Api:
    """The low-level calls the layer makes; ``fail`` names a call and what it raises."""

    def __init__(self, **fail: BaseException) -> None:
        self.fail = fail
        self.removed: list[str] = []
        self.volumes_removed = False
        self.running = True
        self.stream: Frames = iter(())

    def _maybe_fail(self, call: str) -> None:
        if call in self.fail:
            raise self.fail[call]

    def remove_container(self, container: str, **_: Any) -> None:
        self._maybe_fail("remove_container")
        self.removed.append(container)

    def containers(self, **_: Any) -> list[dict[str, Any]]:
        return [
            {"Id": "c1", "Names": ["/cleanroom-p-env01"], "Labels": {"cleanroom.pool": "p"}},
            {"Id": "c2", "Names": None, "Labels": None},
        ]

    def inspect_container(self, container: str) -> dict[str, Any]:
        self._maybe_fail("inspect_container")
        return {"Id": container}

    def get_archive(self, container: str, path: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        self._maybe_fail("get_archive")

        def chunks() -> Iterator[bytes]:
            yield b"first"
            raise requests.exceptions.ChunkedEncodingError("connection broken")

        return chunks(), {"mode": 0o644}

    def put_archive(self, container: str, path: str, data: Any) -> bool:
        return False

    def exec_create(self, container: str, argv: list[str], **_: Any) -> dict[str, str]:
        self._maybe_fail("exec_create")
        return {"Id": "exec-1"}

    def exec_start(self, exec_id: str, **_: Any) -> Any:
        return self.stream

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        return {"Running": self.running, "ExitCode": None if self.running else 3, "Pid": 99}


class _Container:
    def __init__(self, api: _Api, start_fails: bool) -> None:
        self.api = api
        self.id = "new-container"
        self.start_fails = start_fails

    def start(self) -> None:
        if self.start_fails:
            raise _api_error(500, "cannot start: no space left")

    def remove(self, force: bool, v: bool = False) -> None:
        self.api.removed.append(self.id)
        self.api.volumes_removed = v


class _Client:
    def __init__(
        self,
        api: _Api,
        *,
        start_fails: bool = False,
        build: Any = None,
        info: dict[str, Any] | None = None,
    ) -> None:
        self.api = api
        self.containers = self
        self.images = self
        self.start_fails = start_fails
        self.build_failure = build
        self.info_reply = info or {}

    def info(self) -> dict[str, Any]:
        return self.info_reply

    def create(self, image: str, command: Any, **_: Any) -> _Container:
        return _Container(self.api, self.start_fails)

    def build(self, **_: Any) -> None:
        if self.build_failure is not None:
            raise self.build_failure


def _docker(api: _Api, **client: Any) -> Docker:
    return Docker(_Client(api, **client), api, RuntimeUnavailable)


# -- shared primitives --------------------------------------------------------------------


def test_removing_a_missing_container_is_fine_but_a_refusal_is_not() -> None:
    missing = docker.errors.NotFound("404", explanation="No such container: gone")
    _docker(_Api(remove_container=missing)).remove_container("gone")
    refused = _api_error(409, "removal already in progress")
    with pytest.raises(RuntimeUnavailable, match="removal already in progress"):
        _docker(_Api(remove_container=refused)).remove_container("busy")


def test_a_container_that_does_not_start_is_removed_again() -> None:
    api = _Api()
    with pytest.raises(RuntimeUnavailable, match="no space left") as caught:
        _docker(api, start_fails=True).run_container("img", ["sleep", "infinity"])
    assert caught.value.status == 500
    assert api.removed == ["new-container"]
    assert api.volumes_removed  # an anonymous volume (the agent's /logs) goes with it


def test_a_failed_build_step_is_a_build_failure_with_the_end_of_its_log() -> None:
    log = [{"stream": "Step 1/2 : RUN no-such-tool\n"}, {"error": "no-such-tool: not found"}]
    failure = docker.errors.BuildError("the command returned 127", log)
    with pytest.raises(ImageBuildFailed) as caught:
        _docker(_Api(), build=failure).build_image("t:1", labels={}, timeout=5, log_chars=23)
    assert caught.value.log == "no-such-tool: not found"


def test_a_refused_build_keeps_the_daemons_status_for_the_caller_to_judge() -> None:
    refused = _api_error(400, "dockerfile parse error")
    with pytest.raises(RuntimeUnavailable) as caught:
        _docker(_Api(), build=refused).build_image("t:1", labels={}, timeout=5, log_chars=100)
    assert caught.value.status == 400


def test_containers_found_by_label_have_their_names_and_labels() -> None:
    found = _docker(_Api()).containers_labelled("cleanroom.pool")
    assert [(c.id, c.name, c.labels) for c in found] == [
        ("c1", "cleanroom-p-env01", {"cleanroom.pool": "p"}),
        ("c2", "", {}),
    ]


def test_a_container_the_daemon_does_not_hold_is_no_but_a_refusal_is_an_error() -> None:
    assert _docker(_Api()).has_container("trial-1")
    missing = docker.errors.NotFound("404", explanation="No such container: gone")
    assert not _docker(_Api(inspect_container=missing)).has_container("gone")
    unreachable = requests.exceptions.ConnectionError("refused")
    with pytest.raises(RuntimeUnavailable, match="not reachable"):
        _docker(_Api(inspect_container=unreachable)).has_container("trial-1")


@pytest.mark.parametrize(
    ("info", "daemon"),
    [
        ({"ID": "d1b2", "Name": "node-a"}, "d1b2"),
        ({"ID": "", "Name": "node-a"}, "host:node-a"),  # podman names no ID
        ({}, ""),
    ],
)
def test_a_daemon_is_named_by_its_id_else_by_its_host(info: dict[str, Any], daemon: str) -> None:
    assert _docker(_Api(), info=info).daemon_id() == daemon


def test_an_archive_broken_on_its_way_is_the_callers_error_not_a_short_file() -> None:
    chunks, _ = _docker(_Api()).get_archive("ctr", "/state")
    with pytest.raises(RuntimeUnavailable, match="archiving /state in ctr: Docker daemon not"):
        b"".join(chunks)


def test_a_missing_path_in_a_container_is_status_404() -> None:
    missing = docker.errors.NotFound("404", explanation="Could not find the file /state")
    with pytest.raises(RuntimeUnavailable) as caught:
        _docker(_Api(get_archive=missing)).get_archive("ctr", "/state")
    assert caught.value.status == 404


def test_an_archive_the_daemon_refuses_to_unpack_is_an_error_not_silence() -> None:
    with pytest.raises(RuntimeUnavailable, match="was refused"):
        _docker(_Api()).put_archive("ctr", "/", b"tar")


# -- one exec -----------------------------------------------------------------------------


def _chunks(*pairs: tuple[bytes | None, bytes | None]) -> Frames:
    yield from pairs


def test_exec_collects_exit_code_stdout_stderr_and_their_interleaving() -> None:
    api = _Api()
    api.running = False
    api.stream = _chunks((b"out1 ", None), (None, b"err "), (b"out2", None))
    result = _docker(api).exec("ctr", ["sh"])
    assert (result.exit_code, result.stdout, result.stderr) == (3, b"out1 out2", b"err ")
    assert result.output == b"out1 err out2"
    assert (result.timed_out, result.exec_id) == (False, "exec-1")


def test_exec_keeps_the_first_cap_bytes_of_each_stream_or_all_without_a_cap() -> None:
    api = _Api()
    api.running = False
    api.stream = _chunks((b"x" * 10, b"y" * 10))
    capped = _docker(api).exec("ctr", ["sh"], cap=4)
    assert (capped.stdout, capped.stderr, capped.output) == (b"xxxx", b"yyyy", b"xxxx")
    api.stream = _chunks((b"x" * 10, b"y" * 10))
    whole = _docker(api).exec("ctr", ["sh"], cap=None)
    assert (len(whole.stdout), len(whole.stderr), len(whole.output)) == (10, 10, 20)


def _held_open(until: threading.Event) -> Frames:
    yield (b"started\n", None)
    until.wait(10)


def test_a_command_past_its_limit_is_left_running_and_marked_timed_out() -> None:
    api = _Api()
    release = threading.Event()
    api.stream = _held_open(release)
    try:
        result = _docker(api).exec("ctr", ["sleep", "60"], timeout=0.3)
    finally:
        release.set()
    assert (result.timed_out, result.exit_code, result.stdout) == (True, None, b"started\n")


def test_a_child_holding_the_output_ends_the_wait_only_when_children_are_not_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(docker_layer, "_DRAIN_AFTER_EXIT_S", 0.1)
    api = _Api()
    api.running = False  # the command itself has exited; a child keeps the stream open
    release = threading.Event()
    try:
        api.stream = _held_open(release)
        started = time.monotonic()
        result = _docker(api).exec("ctr", ["sh"], timeout=5)
        assert (result.timed_out, result.exit_code) == (False, 3)
        assert time.monotonic() - started < 2
        api.stream = _held_open(release)
        waited = _docker(api).exec("ctr", ["sh"], timeout=0.6, wait_for_children=True)
        assert waited.timed_out
    finally:
        release.set()


def test_a_stream_that_breaks_for_another_reason_is_the_callers_error() -> None:
    def broken() -> Frames:
        yield (b"partial", None)
        raise OSError("socket closed under the reader")

    api = _Api()
    api.running = False
    api.stream = broken()
    with pytest.raises(RuntimeUnavailable, match="reading output of sh: socket closed"):
        _docker(api).exec("ctr", ["sh"])


def test_an_exec_the_daemon_refuses_is_the_callers_error() -> None:
    refused = _api_error(409, "container ctr is paused")
    with pytest.raises(RuntimeUnavailable, match="running sh in ctr: container ctr is paused"):
        _docker(_Api(exec_create=refused)).exec("ctr", ["sh"])


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        ("debian", ("debian", "latest")),
        ("debian:bookworm", ("debian", "bookworm")),
        ("registry:5000/team/img", ("registry:5000/team/img", "latest")),
        ("registry:5000/team/img:v1", ("registry:5000/team/img", "v1")),
        ("img@sha256:abc", ("img", "sha256:abc")),
    ],
)
def test_an_image_name_is_split_for_pulling(image: str, parts: tuple[str, str]) -> None:
    assert _split_tag(image) == parts


def test_podman_as_the_environment_takes_the_place_of_docker_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cleanroom.cli.shared import ContainerEnvironment, use_environment

    monkeypatch.setenv("DOCKER_HOST", "tcp://elsewhere:2375")
    use_environment(ContainerEnvironment.DOCKER)
    assert os.environ["DOCKER_HOST"] == "tcp://elsewhere:2375"
    use_environment(ContainerEnvironment.PODMAN)
    assert os.environ["DOCKER_HOST"] == docker_layer.PODMAN_HOST
