"""Fixtures for the OSWorld checker's integration tests: real processes, real Docker."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import secrets
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Callable, Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
TASKS = REPO / "tests" / "data" / "osworld" / "tasks"
RENAME_TASK = TASKS / "os" / "e0df059f-28a6-4169-924f-b9623e7184cc.json"
CLEANROOM = REPO / ".venv" / "bin" / "cleanroom"

BUSYBOX_TAG = "cleanroom/busybox:test"
# A root with a home and a desktop user whose home is missing, as a fresh account's is.
BUSYBOX_DOCKERFILE = b"""FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
RUN mkdir -p /root /tmp /home && chmod 1777 /tmp \\
 && echo 'root:x:0:0:root:/root:/bin/sh' > /etc/passwd \\
 && echo 'user:x:1000:1000:user:/home/user:/bin/sh' >> /etc/passwd \\
 && echo 'root:x:0:' > /etc/group && echo 'user:x:1000:' >> /etc/group
"""
_RECIPE = hashlib.sha256(BUSYBOX_DOCKERFILE).hexdigest()[:16]


@pytest.fixture()
def rename_task() -> Path:
    """The real OSWorld rename-a-folder task."""
    return RENAME_TASK


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    """A home path that does not exist yet: the local guest creates it with the skeleton."""
    return tmp_path / "home" / "user"


@pytest.fixture()
def slow_rename_task(tmp_path: Path) -> Path:
    """A copy of the rename task whose getter command sleeps past any short limit."""
    data = json.loads(RENAME_TASK.read_text())
    data["evaluator"]["result"]["command"] = "sleep 30; echo 'Directory exists.'"
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(data))
    return path


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed ``cleanroom`` command line as a real subprocess."""
    return subprocess.run(
        [str(CLEANROOM), *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture()
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """The ``cleanroom`` command line, run as a real subprocess."""
    return run_cli


@pytest.fixture()
def desktop_user() -> Iterator[str]:
    """A throwaway account with password 'password' and sudo, removed afterwards.

    Its home is a path under a world-readable temporary folder that does not exist yet,
    so the local guest creates it, skeleton included, the way a first login would.
    """
    if os.geteuid() != 0:
        pytest.fail("creating a test account needs root; run the integration tests as root")
    name = f"crt{secrets.token_hex(3)}"
    base = tempfile.mkdtemp(prefix="cleanroom-test-homes-")
    os.chmod(base, 0o755)
    sudoers = Path(f"/etc/sudoers.d/{name}")
    subprocess.run(
        ["useradd", "-M", "-d", os.path.join(base, name), "-s", "/bin/sh", name], check=True
    )
    try:
        subprocess.run(["chpasswd"], input=f"{name}:password", text=True, check=True)
        sudoers.write_text(f"{name} ALL=(ALL) ALL\n")
        sudoers.chmod(0o440)
        yield name
    finally:
        sudoers.unlink(missing_ok=True)
        subprocess.run(["userdel", name], check=False)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture()
def http_files(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local HTTP server over a folder: (base URL, folder)."""
    root = tmp_path / "served"
    root.mkdir()
    handler = partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


# --- Docker --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def docker_client() -> Any:
    """The Docker SDK client; the test fails (never skips) when the daemon is missing."""
    import docker

    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        pytest.fail(f"these tests need a running Docker daemon, and none answered: {exc}")
    return client


@pytest.fixture(scope="session")
def busybox_image(docker_client: Any) -> str:
    """A tiny image built from the host's static busybox; built once, only if missing."""
    import docker.errors

    with contextlib.suppress(docker.errors.ImageNotFound):
        image = docker_client.images.get(BUSYBOX_TAG)
        if image.labels.get("cleanroom.recipe") == _RECIPE:
            return BUSYBOX_TAG
    busybox = shutil.which("busybox") or "/bin/busybox"
    if not os.path.exists(busybox):
        pytest.fail("building the test image needs a static busybox (Debian: busybox-static)")
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(BUSYBOX_DOCKERFILE)
        tar.addfile(info, io.BytesIO(BUSYBOX_DOCKERFILE))
        tar.add(busybox, arcname="busybox")
    context.seek(0)
    docker_client.images.build(
        fileobj=context,
        custom_context=True,
        tag=BUSYBOX_TAG,
        labels={"cleanroom.recipe": _RECIPE},
        rm=True,
    )
    return BUSYBOX_TAG


@pytest.fixture()
def container(docker_client: Any, busybox_image: str) -> Iterator[Any]:
    """A running busybox container with no network, removed afterwards."""
    ctr = docker_client.containers.run(
        busybox_image,
        ["sleep", "infinity"],
        detach=True,
        network_mode="none",
        labels={"cleanroom.test": "osworld"},
        name=f"cleanroom-test-{secrets.token_hex(4)}",
    )
    try:
        yield ctr
    finally:
        with contextlib.suppress(Exception):
            ctr.remove(force=True)
