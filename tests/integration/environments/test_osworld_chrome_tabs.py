"""OSWorld's ``chrome_open_tabs`` and ``chrome_close_tabs`` steps and the Chrome tab
getters on a real pool environment (sandbox mode), through its `DesktopGuest`: Chrome
started by the task's own ``launch`` steps, its DevTools port forwarded with ``socat`` as
the tasks do, and pages served inside the environment by a server this test starts (no
network). The tabs are opened once for the module; the close test runs last."""

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
from cleanroom.verifiers.osworld.guest_program import SYSTEM_PYTHON
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.setup_steps import StepContext, run_steps
from cleanroom.verifiers.osworld.task import SetupStep
from cleanroom.verifiers.osworld.task_cache import TaskCache

pytestmark = [pytest.mark.slow, pytest.mark.beside_desktops]

ENV = "env01"
PORT = 8765
SITE = f"http://127.0.0.1:{PORT}"
PAGES = {
    "one.html": "<!doctype html><html><head><title>Page One</title></head>"
    '<body><p class="x">first</p></body></html>',
    "two.html": "<html><head><title>Page Two</title></head><body>"
    '<div class="route">SEA<span>-</span>NYC</div><h1> Fares </h1>'
    '<input id="q" value=" typed "></body></html>',
}
LAUNCH = (
    SetupStep("launch", {"command": ["google-chrome", "--remote-debugging-port=1337"]}),
    SetupStep("launch", {"command": "socat tcp-listen:9222,fork tcp:localhost:1337"}),
)


class Chrome:
    """The environment's guest with Chrome up and the two pages opened by the step."""

    def __init__(self, guest: DesktopGuest, cache: TaskCache) -> None:
        self.guest = guest
        self.cache = cache
        self.settings = CheckSettings()
        self.opened: list[dict[str, Any]] = []

    def steps(self, *todo: SetupStep) -> list[dict[str, Any]]:
        return run_steps(todo, "config", StepContext(self.guest, self.settings, self.cache))

    def get(self, kind: str, **config: Any) -> Any:
        ctx = GetterContext(self.guest, self.settings, self.cache)
        return GETTERS[kind](ctx, {"type": kind, **config})


@pytest.fixture(scope="module")
def chrome(desktop_stack: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chrome]:
    if shutil.which("google-chrome") is None or shutil.which("socat") is None:
        pytest.skip("the Chrome stand-in and socat are not installed")
    pool = Pool(PoolConfig(envs=1, programs=()), tmp_path_factory.mktemp("chrome"))
    pool.start()
    cache = TaskCache(None, "chrome-tabs")
    cache.reset()
    guest = DesktopGuest(ENV, pool.env(ENV).describe())
    try:
        for name, html in PAGES.items():
            guest.write_file(f"~/site/{name}", html.encode())
        server = [SYSTEM_PYTHON, "-m", "http.server", str(PORT), "--bind", "127.0.0.1"]
        guest.spawn([*server, "-d", "site"], shell=False)

        def serving() -> bool | None:
            probe = ["curl", "-sf", f"{SITE}/one.html"]
            return guest.exec(probe, shell=False, timeout=5).exit_code == 0 or None

        assert wait_until(serving, 10, 0.2), "the page server in the environment never answered"
        up = Chrome(guest, cache)
        urls = [f"{SITE}/one.html", f"{SITE}/two.html"]
        records = up.steps(*LAUNCH, SetupStep("chrome_open_tabs", {"urls_to_open": urls}))
        up.opened = records[-1]["tabs"]
        yield up
    finally:
        guest.close()  # ends Chrome, socat and the server
        cache.discard()
        pool.stop()


def test_open_tabs_loads_each_page_in_a_tab_of_its_own(chrome: Chrome) -> None:
    assert [(t["title"], t["loaded"]) for t in chrome.opened] == [
        ("Page One", True),
        ("Page Two", True),
    ]


def test_open_tabs_info_lists_the_pages_and_not_the_tab_chrome_started_with(
    chrome: Chrome,
) -> None:
    assert sorted((t["title"], t["url"]) for t in chrome.get("open_tabs_info")) == [
        ("Page One", f"{SITE}/one.html"),
        ("Page Two", f"{SITE}/two.html"),
    ]


def test_the_active_tab_is_the_last_opened(chrome: Chrome) -> None:
    url = chrome.get("active_url_from_accessTree", goto_prefix="http://")
    info = chrome.get("active_tab_info", goto_prefix="http://")

    assert url == f"{SITE}/two.html"
    assert (info["title"], info["url"]) == ("Page Two", f"{SITE}/two.html")


def test_page_info_loads_the_page_and_gives_its_html(chrome: Chrome) -> None:
    page = chrome.get("page_info", url=f"{SITE}/one.html")

    assert page["title"] == "Page One" and '<p class="x">first</p>' in page["content"]
    assert page["content"].startswith("<!DOCTYPE html>")


def test_html_parse_reads_the_active_tab_by_class_xpath_and_input(chrome: Chrome) -> None:
    def parse(**config: Any) -> Any:
        return chrome.get("active_tab_html_parse", goto_prefix="http://", **config)

    by_class = parse(category="class", class_multiObject_child={"route": {"1": "to"}})
    by_xpath = parse(category="xpath", xpathObject={"//h1": "heading", "//h9": "none"})
    by_input = parse(category="input", inputObject={"//input[@id='q']": "query"})

    assert by_class == {"to": "NYC"}
    assert by_xpath == {"heading": "Fares", "none": ""}
    assert by_input == {"query": "typed"}


def test_pdf_from_url_prints_the_page_into_the_cache(chrome: Chrome) -> None:
    saved = chrome.get("pdf_from_url", path=f"{SITE}/one.html", dest="one.pdf")

    assert saved.data.startswith(b"%PDF-") and len(saved.data) > 1000
    assert chrome.cache.read("one.pdf").data == saved.data


def test_close_tabs_closes_the_tab_of_the_url(chrome: Chrome) -> None:
    chrome.steps(SetupStep("chrome_close_tabs", {"urls_to_close": [f"{SITE}/two.html"]}))

    assert [t["url"] for t in chrome.get("open_tabs_info")] == [f"{SITE}/one.html"]
