"""The getters of Chrome's profile files against OSWorld's, on generated profiles.

Both sides read the same home: OSWorld's getters through the fake VM (its Python command
for the profile's path, then ``/file``), cleanroom's through the local guest.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("desktop_env")

from hypothesis import given, settings
from hypothesis import strategies as st

from cleanroom.verifiers.osworld.getters.chrome_profile import CHROME_PROFILE_GETTERS

from .fake_vm import Sides
from .reference import EXAMPLES, Raised

PREFERENCE_GETTERS = sorted(set(CHROME_PROFILE_GETTERS) - {"bookmarks", "history", "cookie_data"})
PROFILE = Path(".config/google-chrome/Default")

LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-1, 6)
    | st.sampled_from([5.0, 0.0, 13.5])
    | st.text(max_size=3)
)
JSON = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=4,
)


def maybe(strategy: Any) -> Any:
    """Mostly the shape Chrome writes, sometimes any JSON value instead."""
    return strategy | strategy | strategy | JSON


def keys(fields: dict[str, Any]) -> Any:
    """An object with every one of these keys, or with some of them."""
    return st.fixed_dictionaries(fields) | st.fixed_dictionaries({}, optional=fields)


EXTENSION = maybe(
    keys(
        {
            "path": maybe(st.text(max_size=8)),
            "manifest": maybe(keys({"name": JSON})),
        },
    )
)
PREFERENCES = keys(
    {
        "default_search_provider_data": maybe(
            keys({"template_url_data": maybe(keys({"short_name": JSON}))})
        ),
        "profile": maybe(keys({"name": JSON, "default_content_setting_values": JSON})),
        "webkit": maybe(keys({"webprefs": JSON})),
        "enable_do_not_track": JSON,
        "safebrowsing": maybe(keys({"enabled": JSON, "enhanced": JSON})),
        "session": maybe(keys({"restore_on_startup": st.integers(0, 6) | JSON})),
        "extensions": maybe(
            keys({"settings": maybe(st.dictionaries(st.text(max_size=3), EXTENSION))})
        ),
    }
)


def encode(value: Any, how: str) -> bytes | None:
    """A Preferences or Bookmarks file as an agent or Chrome might leave it."""
    text = json.dumps(value)
    return {
        "utf-8": lambda: text.encode(),
        "utf-16": lambda: text.encode("utf-16"),
        "not JSON": lambda: text.encode()[:-1] + b"\xff",
        "empty": lambda: b"",
        "missing": lambda: None,
        "a list": lambda: json.dumps([value]).encode(),
    }[how]()


def place(sides: Sides, name: str, data: bytes | None) -> None:
    folder = sides.home / PROFILE
    folder.mkdir(parents=True, exist_ok=True)
    if data is not None:
        (folder / name).write_bytes(data)


def agree(getter: str, mine: Any, theirs: Any, case: Any) -> None:
    if isinstance(theirs, Raised):  # OSWorld crashes on what the agent left: 0 here
        assert isinstance(mine, Raised) and mine.error == "UnreadableResult", (getter, mine)
        return
    assert mine == theirs, (getter, case, mine, theirs)


ENCODINGS = st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-16", "not JSON", "empty", "missing"])


# Each example runs every preference getter on both sides: fewer examples, as many calls.
@settings(EXAMPLES, max_examples=min(EXAMPLES.max_examples, 60))
@given(preferences=PREFERENCES | JSON, how=ENCODINGS)
def test_preference_getters(sides: Sides, preferences: Any, how: str) -> None:
    sides.reset()
    place(sides, "Preferences", encode(preferences, how))
    for getter in PREFERENCE_GETTERS:
        mine, theirs = sides.run(getter, {"type": getter})
        agree(getter, mine, theirs, (preferences, how))


BOOKMARK = st.fixed_dictionaries(
    {"name": st.text(max_size=4), "type": st.sampled_from(["url", "folder"])},
    optional={"url": st.text(max_size=6)},
)
BOOKMARKS = st.fixed_dictionaries(
    {},
    optional={
        "roots": maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "bookmark_bar": st.fixed_dictionaries(
                        {"children": st.lists(BOOKMARK, max_size=3)}
                    ),
                    "other": JSON,
                },
            )
        ),
        "version": st.just(1),
    },
)


@EXAMPLES
@given(bookmarks=BOOKMARKS | JSON, how=st.sampled_from([*ENCODINGS.elements, "a list"]))
def test_bookmarks(sides: Sides, bookmarks: Any, how: str) -> None:
    sides.reset()
    place(sides, "Bookmarks", encode(bookmarks, how))
    mine, theirs = sides.run("bookmarks", {"type": "bookmarks"})
    agree("bookmarks", mine, theirs, (bookmarks, how))


# --- History and Cookies -------------------------------------------------------------

TEXT = st.text(max_size=5) | st.sampled_from(["BAD UTF-8"])
ROWS = st.lists(st.tuples(TEXT, TEXT, st.integers(0, 2**62)), max_size=4)


SCHEMAS = {
    "urls": "CREATE TABLE urls (id INTEGER PRIMARY KEY, url, title, last_visit_time)",
    "cookies": "CREATE TABLE cookies (host_key, name, creation_utc INTEGER)",
    "other": "CREATE TABLE other (a, b, c)",
}
INSERTS = {
    "urls": "INSERT INTO urls (url, title, last_visit_time) VALUES ({}, {}, ?)",
    "cookies": "INSERT INTO cookies VALUES ({}, {}, ?)",
    "other": "INSERT INTO other VALUES ({}, {}, ?)",
}


def sqlite_file(folder: Path, table: str, rows: list[tuple[Any, ...]], how: str) -> bytes | None:
    """A History (``urls``) or Cookies (``cookies``) database, made in ``folder``; a
    text "BAD UTF-8" is stored as text that is not UTF-8."""
    if how == "missing":
        return None
    if how == "not a database":
        return b"SQLite format 3\x00" + b"\x00" * 40
    path = folder / f"{table}.sqlite"
    path.unlink(missing_ok=True)
    connection = sqlite3.connect(path)
    if how == "wal":
        connection.execute("PRAGMA journal_mode=WAL")
    connection.execute(SCHEMAS[table])
    for first, second, number in rows:
        texts = [t for t in (first, second) if t != "BAD UTF-8"]
        slots = ["CAST(x'ff' AS TEXT)" if t == "BAD UTF-8" else "?" for t in (first, second)]
        connection.execute(INSERTS[table].format(*slots), [*texts, number])
    connection.commit()
    connection.close()
    data = path.read_bytes()
    path.unlink()
    return data


@EXAMPLES
@given(
    getter=st.sampled_from(["history", "cookie_data"]),
    rows=ROWS,
    how=st.sampled_from(["plain", "plain", "wal", "no table", "not a database", "missing"]),
)
def test_sqlite_getters(
    sides: Sides, tmp_path_factory: pytest.TempPathFactory, getter: str, rows: Any, how: str
) -> None:
    sides.reset()
    name, table = ("History", "urls") if getter == "history" else ("Cookies", "cookies")
    if how == "no table":
        table = "other"
    work = tmp_path_factory.getbasetemp() / "sqlite-work"
    work.mkdir(exist_ok=True)
    place(sides, name, sqlite_file(work, table, rows, how))
    mine, theirs = sides.run(getter, {"type": getter, "dest": f"{name}.sqlite"})
    assert mine == theirs, (getter, rows, how, mine, theirs)
    if how in ("plain", "wal") and not any("BAD UTF-8" in r for r in rows):
        assert isinstance(mine, list) and len(mine) == len(rows)


# The configs of the OSWorld-Verified tasks that use these getters.
TASK_CONFIGS = [
    {"type": "default_search_engine"},
    {"type": "cookie_data", "dest": "Cookies"},
    {"type": "bookmarks"},
    {"type": "profile_name"},
    {"type": "chrome_font_size"},
    {"type": "data_delete_automacally"},
    {"type": "find_unpacked_extension_path"},
    {"type": "new_startup_page"},
    {"type": "enable_do_not_track"},
    {"type": "enable_safe_browsing"},
    {"type": "history", "dest": "history.sqlite"},
    {"type": "find_installed_extension_name"},
]
A_PROFILE = {
    "Preferences": json.dumps(
        {
            "default_search_provider_data": {"template_url_data": {"short_name": "Bing"}},
            "profile": {"name": "Thomas", "default_content_setting_values": {"cookies": 4}},
            "webkit": {"webprefs": {"default_font_size": 20}},
            "enable_do_not_track": True,
            "safebrowsing": {"enabled": False, "enhanced": True},
            "session": {"restore_on_startup": 5},
            "extensions": {
                "settings": {
                    "abc": {"path": "/home/user/Desktop/helloExtension", "manifest": {"name": "H"}}
                }
            },
        }
    ).encode(),
    "Bookmarks": json.dumps({"roots": {"bookmark_bar": {"children": []}}}).encode(),
}


@pytest.mark.parametrize("config", TASK_CONFIGS, ids=[c["type"] for c in TASK_CONFIGS])
@pytest.mark.parametrize("profile", ["a profile", "no profile"])
def test_task_configs(fresh: Sides, tmp_path: Path, config: dict[str, Any], profile: str) -> None:
    if profile == "a profile":
        for name, data in A_PROFILE.items():
            place(fresh, name, data)
        place(fresh, "History", sqlite_file(tmp_path, "urls", [("https://a", "A", 1)], "plain"))
        place(fresh, "Cookies", sqlite_file(tmp_path, "cookies", [("a.com", "n", 2)], "plain"))
    mine, theirs = fresh.run(config["type"], config)
    assert mine == theirs, (config, mine, theirs)
