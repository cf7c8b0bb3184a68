"""The ``chrome_open_tabs``, ``chrome_close_tabs`` and ``update_browse_history`` setup
steps with a scripted guest (no Chrome): what they ask the DevTools helper, and the
failures OSWorld stops on; and the Chrome getters' refusal of a guest with no desktop.
The helper itself is exercised against a real Chrome by the integration tests."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cleanroom.exec_result import ExecResult
from cleanroom.guests.base import Command, Guest
from cleanroom.verifiers.osworld import setup_steps
from cleanroom.verifiers.osworld.getters import GETTERS, GetterContext, GetterFailed
from cleanroom.verifiers.osworld.mirror import DATASET_URL, EMPTY_HISTORY_URL, Mirror
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.setup_steps import (
    CHROME_HISTORY,
    SetupStepFailed,
    StepContext,
    run_steps,
)
from cleanroom.verifiers.osworld.task import SetupStep
from cleanroom.verifiers.osworld.task_cache import TaskCache


class ChromeGuest(Guest):
    """Answers the Chrome helper from a table of tabs; records each operation asked."""

    kind = "scripted-desktop"
    has_desktop = True

    def __init__(self, tabs: list[dict[str, Any]] | None, opened: list[dict[str, Any]]) -> None:
        self.tabs = tabs  # None: nothing answers on the port
        self.opened = opened
        self.asked: list[tuple[str, dict[str, Any], bool]] = []
        self.written: dict[str, bytes] = {}

    @property
    def home(self) -> str:
        return "/home/user"

    def exec(
        self, command: Command, *, shell: bool, timeout: float, user: str | None = None
    ) -> ExecResult:
        assert isinstance(command, list)
        op, args = command[4], json.loads(command[5])
        self.asked.append((op, args, shell))
        if self.tabs is None:
            answer: dict[str, Any] = {"connected": False, "why": "nothing answered on port 9222"}
        elif op == "open":
            answer = {"connected": True, "opened": self.opened}
        elif op == "tabs":
            answer = {"connected": True, "tabs": self.tabs}
        elif op == "visit":
            answer = {"connected": True, "page": {"url": args["url"], "error": "refused"}}
        else:
            answer = {"connected": True, "closed": args["ids"]}
        return ExecResult(exit_code=0, stdout=json.dumps(answer).encode())

    def spawn(self, command: Command, *, shell: bool, user: str | None = None) -> None:
        raise AssertionError("no step here starts a program")

    def read_file(self, path: str) -> bytes:
        raise FileNotFoundError(path)

    def write_file(self, path: str, data: bytes) -> None:
        self.written[path] = data

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind}

    def fresh(self) -> Guest:
        return ChromeGuest(self.tabs, self.opened)


@pytest.fixture
def settings(tmp_path: Path) -> CheckSettings:
    return CheckSettings(cache_root=str(tmp_path / "cache"), mirror=Mirror(str(tmp_path / "m")))


@pytest.fixture
def cache(settings: CheckSettings) -> Iterator[TaskCache]:
    c = TaskCache(settings.cache_root, "t")
    c.reset()
    yield c
    c.discard()


@pytest.fixture(autouse=True)
def _no_launch_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(setup_steps.time, "sleep", lambda seconds: None)


def run(guest: Guest, settings: CheckSettings, cache: TaskCache, *steps: SetupStep) -> Any:
    return run_steps(tuple(steps), "config", StepContext(guest, settings, cache))


def test_open_tabs_hands_the_urls_to_the_helper_as_data_on_the_forwarded_port(
    settings: CheckSettings, cache: TaskCache
) -> None:
    opened = [{"id": "A", "asked": "https://a.com/", "title": "A", "loaded": True}]
    guest = ChromeGuest([], opened)
    urls = ["https://a.com/", "https://b.com/?q=$(rm -rf ~)"]

    [record] = run(guest, settings, cache, SetupStep("chrome_open_tabs", {"urls_to_open": urls}))

    [(op, args, shell)] = guest.asked
    assert (op, args["urls"], args["port"], shell) == ("open", urls, 9222, False)
    assert record["ok"] and record["tabs"] == opened


def test_open_tabs_fails_the_setup_when_no_chrome_answers(
    settings: CheckSettings, cache: TaskCache
) -> None:
    with pytest.raises(SetupStepFailed, match="no Chrome DevTools endpoint"):
        run(
            ChromeGuest(None, []),
            settings,
            cache,
            SetupStep("chrome_open_tabs", {"urls_to_open": ["https://a.com/"]}),
        )


def test_open_tabs_needs_a_list_of_urls(settings: CheckSettings, cache: TaskCache) -> None:
    guest = ChromeGuest([], [])
    with pytest.raises(SetupStepFailed, match="urls_to_open"):
        run(guest, settings, cache, SetupStep("chrome_open_tabs", {"urls_to_open": "x"}))
    assert guest.asked == []


def test_close_tabs_closes_the_first_tab_of_each_url_and_skips_urls_no_tab_shows(
    settings: CheckSettings, cache: TaskCache
) -> None:
    tabs = [
        {"id": "1", "url": "https://www.lonelyplanet.com/"},
        {"id": "2", "url": "https://www.tripadvisor.com/"},
        {"id": "3", "url": "https://www.tripadvisor.com/"},
    ]
    guest = ChromeGuest(tabs, [])
    urls = ["https://www.tripadvisor.com", "https://nowhere.example"]

    [record] = run(guest, settings, cache, SetupStep("chrome_close_tabs", {"urls_to_close": urls}))

    assert [op for op, _, _ in guest.asked] == ["tabs", "close"]
    assert guest.asked[1][1]["ids"] == ["2"]
    assert record["unmatched"] == ["https://nowhere.example"]


def empty_history(path: Path) -> None:
    path.parent.mkdir(parents=True)
    connection = sqlite3.connect(path)
    connection.executescript(
        "CREATE TABLE urls (id INTEGER PRIMARY KEY, url TEXT, title TEXT, visit_count INTEGER,"
        " typed_count INTEGER, last_visit_time INTEGER, hidden INTEGER);"
        "CREATE TABLE visits (id INTEGER PRIMARY KEY, url INTEGER, visit_time INTEGER,"
        " from_visit INTEGER, transition INTEGER, segment_id INTEGER, visit_duration INTEGER);"
    )
    connection.close()


def test_update_browse_history_writes_the_mirrors_empty_history_with_the_visits(
    settings: CheckSettings, cache: TaskCache, tmp_path: Path
) -> None:
    assert settings.mirror is not None
    empty_history(Path(settings.mirror.location) / EMPTY_HISTORY_URL[len(DATASET_URL) :])
    guest = ChromeGuest([], [])
    history = [{"url": "https://a.com/", "title": "A", "visit_time_from_now_in_seconds": 5}]

    run(guest, settings, cache, SetupStep("update_browse_history", {"history": history}))

    (tmp_path / "History").write_bytes(guest.written[CHROME_HISTORY])
    connection = sqlite3.connect(tmp_path / "History")
    assert connection.execute("SELECT url, title FROM urls").fetchall() == [("https://a.com/", "A")]
    connection.close()


def test_update_browse_history_fails_when_the_mirror_lacks_the_empty_history(
    settings: CheckSettings, cache: TaskCache
) -> None:
    guest = ChromeGuest([], [])
    with pytest.raises(SetupStepFailed, match=r"history_empty\.sqlite"):
        run(guest, settings, cache, SetupStep("update_browse_history", {"history": []}))
    assert guest.written == {}


def test_the_chrome_getters_refuse_a_guest_without_a_desktop(
    settings: CheckSettings, cache: TaskCache
) -> None:
    guest = NoDesktopChromeGuest([], [])

    with pytest.raises(GetterFailed, match="need a desktop session"):
        GETTERS["open_tabs_info"](GetterContext(guest, settings, cache), {"type": "open_tabs_info"})
    assert guest.asked == []


class NoDesktopChromeGuest(ChromeGuest):
    kind = "scripted"
    has_desktop = False


def test_pdf_from_url_saves_osworlds_placeholder_after_three_failed_loads(
    settings: CheckSettings, cache: TaskCache
) -> None:
    guest = ChromeGuest([], [])  # every visit answers a page that failed to load

    saved = GETTERS["pdf_from_url"](
        GetterContext(guest, settings, cache),
        {"type": "pdf_from_url", "path": "https://a.com/", "dest": "a.pdf"},
    )

    assert [op for op, _, _ in guest.asked] == ["visit"] * 3
    assert cache.read("a.pdf").data == saved.data == b"%PDF-1.4\n%EOF\n"
