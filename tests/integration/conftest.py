"""What every kind of integration test shares: the check that the desktop stack is here,
the runtime on the real Docker daemon, and one run of `cleanroom demo`. A missing part
fails the tests with what to do about it; nothing is skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from cleanroom.verifiers.container.docker_runtime import DockerRuntime, RuntimeUnavailable

# Everything a pool with every program needs; a test that starts fewer programs names less.
DESKTOP_STACK = ("Xvfb", "xauth", "dbus-daemon", "soffice", "xterm", "chromium", "useradd")
# The image every example task is built from.
BASE_IMAGE = "cleanroom/base:bookworm"


def require_desktop_stack(needed: Sequence[str] = DESKTOP_STACK) -> None:
    """Fail (never skip) with a clear message when not root (a pool creates Unix users) or
    when a program in ``needed`` is missing (Writer also needs the system Python that runs
    the AT-SPI reader)."""
    if os.geteuid() != 0:
        pytest.fail("these tests start desktop environments, which create Unix users: run as root")
    missing = [p for p in needed if shutil.which(p) is None]
    if "soffice" in needed and not os.path.exists("/usr/bin/python3"):
        missing.append("/usr/bin/python3 (with python3-pyatspi)")
    if missing:
        pytest.fail(f"missing for desktop environments: {', '.join(missing)}; run scripts/setup.sh")


@pytest.fixture(scope="session")
def desktop_stack() -> None:
    """The whole desktop stack, checked once (see `require_desktop_stack`)."""
    require_desktop_stack()


@pytest.fixture(scope="session")
def runtime() -> Iterator[DockerRuntime]:
    """A runtime on the real daemon whose every container and image is labelled for cleanup."""
    labels = {"cleanroom.test": "1", "cleanroom.session": uuid.uuid4().hex[:12]}
    try:
        rt = DockerRuntime.connect(labels)
    except RuntimeUnavailable as exc:
        pytest.fail(f"these tests need a running Docker daemon ({exc}); run `make setup`")
    try:
        rt.docker.client.images.get(BASE_IMAGE)
    except Exception as exc:  # any failure here has the same fix
        pytest.fail(f"the base image {BASE_IMAGE} is missing ({exc}); run `make setup`")
    yield rt
    rt.remove_labelled(labels)


# One finished `cleanroom demo`: its run folder and what it printed.
DemoRun = tuple[Path, subprocess.CompletedProcess[str]]

# A session fixture's setup counts against the first test that asks for it.
DEMO_TIMEOUT_S = 880


@pytest.fixture(scope="session")
def demo_run(desktop_stack: None, tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """`cleanroom demo`, run once per session as a user runs it. Its own test reads all of
    it; the red-team tests judge the container matrix it ran (the product's own run of
    it) instead of running the same matrix again."""
    run = tmp_path_factory.mktemp("demo") / "run"
    cli = Path(sys.executable).with_name("cleanroom")
    proc = subprocess.run(
        [str(cli), "demo", "--run", str(run)],
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
    )
    return run, proc
