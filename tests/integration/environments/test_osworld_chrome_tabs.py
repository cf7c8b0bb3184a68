"""OSWorld's ``chrome_open_tabs`` step and the Chrome tab getters on a real pool
environment (sandbox mode), through its `DesktopGuest`: Chrome started by the task's
own ``launch`` steps, its DevTools port forwarded with ``socat`` as the tasks do, and
pages served inside the environment by a server this test starts (no network)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.guests.desktop import DesktopGuest
from cleanroom.lifecycle import wait_until
from cleanroom.verifiers.osworld.getters import GETTERS, GetterContext
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.setup_steps import SYSTEM_PYTHON, StepContext, run_steps
from cleanroom.verifiers.osworld.task import SetupStep
from cleanroom.verifiers.osworld.task_cache import TaskCache

pytestmark = pytest.mark.slow

ENV = "env01"
PORT = 8765
SITE = f"http://127.0.0.1:{PORT}"
PAGES = {
    "one.html": "<!doctype html><html><head><title>Page One</title></head>"
    '<body><p class="x">first</p></body></html>',
    "two.html": "<html><head><title>Page Two</title></head><body>second</body></html>",
}


@pytest.fixture(scope="module")
def pool(desktop_stack: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    if shutil.which("google-chrome") is None or shutil.which("socat") is None:
        pytest.skip("the Chrome stand-in and socat are not installed")
    p = Pool(PoolConfig(envs=1, programs=()), tmp_path_factory.mktemp("chrome"))
    p.start()
    try:
        yield p
    finally:
        p.stop()


@pytest.fixture
def guest(pool: Pool) -> Iterator[DesktopGuest]:
    g = DesktopGuest(ENV, pool.env(ENV).describe())
    try:
        for name, html in PAGES.items():
            g.write_file(f"~/site/{name}", html.encode())
        g.spawn(
            [SYSTEM_PYTHON, "-m", "http.server", str(PORT), "--bind", "127.0.0.1", "-d", "site"],
            shell=False,
        )
        yield g
    finally:
        g.close()  # ends Chrome, socat and the server


def test_open_tabs_opens_the_pages_and_the_getters_read_them_back(guest: DesktopGuest) -> None:
    cache = TaskCache(None, "chrome-tabs")
    cache.reset()
    settings = CheckSettings()
    server_up = wait_until(
        lambda: (
            guest.exec(["curl", "-sf", f"{SITE}/one.html"], shell=False, timeout=5).exit_code == 0
            or None
        ),
        10,
        0.2,
    )
    assert server_up, "the page server in the environment never answered"
    try:
        records = run_steps(
            (
                SetupStep("launch", {"command": ["google-chrome", "--remote-debugging-port=1337"]}),
                SetupStep("launch", {"command": "socat tcp-listen:9222,fork tcp:localhost:1337"}),
                SetupStep(
                    "chrome_open_tabs",
                    {"urls_to_open": [f"{SITE}/one.html", f"{SITE}/two.html"]},
                ),
            ),
            "config",
            StepContext(guest, settings, cache),
        )
        opened = records[2]["tabs"]
        assert [t["title"] for t in opened] == ["Page One", "Page Two"]
        assert all(t["loaded"] for t in opened)

        ctx = GetterContext(guest, settings, cache)

        def get(kind: str, **config: Any) -> Any:
            return GETTERS[kind](ctx, {"type": kind, **config})

        tabs = get("open_tabs_info")
        # The tab Chrome started with was closed once the first page was open.
        assert sorted((t["title"], t["url"]) for t in tabs) == [
            ("Page One", f"{SITE}/one.html"),
            ("Page Two", f"{SITE}/two.html"),
        ]
        assert get("active_url_from_accessTree", goto_prefix="http://") == f"{SITE}/two.html"
        page = get("page_info", url=f"{SITE}/one.html")
        assert page["title"] == "Page One" and '<p class="x">first</p>' in page["content"]
        assert page["content"].startswith("<!DOCTYPE html>")
    finally:
        cache.discard()
