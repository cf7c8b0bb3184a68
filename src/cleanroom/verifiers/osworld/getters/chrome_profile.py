"""OSWorld's getters that read Chrome's profile files (no browser needs to run).

They read ``~/.config/google-chrome/Default/``: ``Preferences`` and ``Bookmarks`` (JSON),
``History`` and ``Cookies`` (SQLite). OSWorld catches every failure in most of them and
returns a fixed value instead (``"Google"``, ``"false"``, None, ...): a missing or
malformed file is then a value its metric scores, and these getters give the same value.
Nothing the agent left can make them fail as the infrastructure would.

The SQLite files are copied into the task cache and opened from there, read-only and
as immutable, so nothing in the agent's copy (a journal, a link) is followed or written.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from cleanroom.verifiers.osworld.getters.core import (
    Getter,
    GetterContext,
    GetterFailed,
    UnreadableResult,
    cache_write,
    read_agent_file,
)

PROFILE = "~/.config/google-chrome/Default"


def _preferences(ctx: GetterContext) -> Any:
    """Chrome's parsed ``Preferences``; raises (anything) where OSWorld's ``json.loads``
    would, so each getter falls back to its value for a failure, as OSWorld's does."""
    data = read_agent_file(ctx, f"{PROFILE}/Preferences")
    if data is None:
        raise FileNotFoundError("Preferences")
    return json.loads(data)  # bytes, as OSWorld hands them: UTF-8, -16 or -32


def _from_preferences(read: Callable[[Any], Any], on_failure: Any) -> Getter:
    """A getter reading one thing from ``Preferences``: ``read(data)``, or ``on_failure``
    when the file is missing or the reading raises (OSWorld's ``except Exception``)."""

    def getter(ctx: GetterContext, config: dict[str, Any]) -> Any:
        try:
            data = _preferences(ctx)
        except Exception:
            return copy.deepcopy(on_failure)  # a fresh value each time, as OSWorld's
        try:
            return read(data)
        except Exception:
            return copy.deepcopy(on_failure)

    getter.__doc__ = read.__doc__
    return getter


def _search_engine(data: Any) -> Any:
    """The default search engine's short name (``Google`` when unset)."""
    provider = data.get("default_search_provider_data", {}).get("template_url_data", {})
    return provider.get("short_name", "Google")


def _profile_name(data: Any) -> Any:
    """The profile's name, None when unset."""
    return data.get("profile", {}).get("name", None)


def _font_size(data: Any) -> Any:
    """The ``webkit.webprefs`` font sizes (OSWorld's defaults when unset)."""
    defaults = {"default_fixed_font_size": 13, "default_font_size": 16, "minimum_font_size": 13}
    return data.get("webkit", {}).get("webprefs", defaults)


def _do_not_track(data: Any) -> str:
    """``"true"`` when Do Not Track is on."""
    return "true" if data.get("enable_do_not_track", {}) else "false"


def _safe_browsing(data: Any) -> str:
    """``"true"`` when safe browsing (standard or enhanced) is on."""
    safebrowsing = data.get("safebrowsing", {})
    enhanced = bool(safebrowsing.get("enhanced", False))
    enabled = bool(safebrowsing.get("enabled", False))
    return "true" if (enhanced or enabled) else "false"


def _new_startup_page(data: Any) -> str:
    """``"true"`` when Chrome opens the New Tab page on start (no ``session`` at all, or
    ``restore_on_startup`` 5)."""
    if "session" not in data.keys():  # noqa: SIM118 - a list must raise, as in OSWorld
        return "true"
    return "true" if data.get("session", {}).get("restore_on_startup", {}) == 5 else "false"


def _extension_paths(data: Any) -> list[Any]:
    """The folder of every extension in the profile (``.keys()``: settings that are no
    object fail, as in OSWorld)."""
    extensions = data.get("extensions", {}).get("settings", {})
    return [extensions[key]["path"] for key in extensions.keys()]  # noqa: SIM118 - as above


def _extension_names(data: Any) -> list[Any]:
    """The manifest name of every extension in the profile."""
    extensions = data.get("extensions", {}).get("settings", {})
    return [extensions[key]["manifest"]["name"] for key in extensions.keys()]  # noqa: SIM118 - as above


def _delete_on_exit(data: Any) -> str:
    """``"true"`` when the profile has any ``default_content_setting_values``."""
    state = data["profile"].get("default_content_setting_values", None)
    return "true" if state is not None else "false"


def get_bookmarks(ctx: GetterContext, config: dict[str, Any]) -> Any:
    """The ``roots`` of Chrome's ``Bookmarks``; ``[]`` when the file is missing or empty.

    OSWorld crashes on a file that is no JSON object; what the agent left scores 0 here
    (`UnreadableResult`).
    """
    data = read_agent_file(ctx, f"{PROFILE}/Bookmarks")
    if not data:
        return []
    try:
        return json.loads(data).get("roots", {})
    except (ValueError, AttributeError, RecursionError) as exc:
        raise UnreadableResult(f"Chrome's Bookmarks file cannot be read: {exc}") from exc


def _query(ctx: GetterContext, config: dict[str, Any], name: str, sql: str) -> Any:
    """The rows of ``sql`` over the profile's SQLite file ``name``, copied to ``dest``;
    None when the file is missing or the query fails, as OSWorld gives."""
    dest = config.get("dest")
    if not isinstance(dest, str):
        raise GetterFailed(f"the getter of Chrome's {name} needs a 'dest'")
    data = read_agent_file(ctx, f"{PROFILE}/{name}")
    if data is None:
        return None
    saved = cache_write(ctx, dest, data)
    try:
        # immutable: no journal or WAL file beside the copy is looked for or made.
        connection = sqlite3.connect(f"file:{quote(saved.path)}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return None
    try:
        return connection.execute(sql).fetchall()
    except Exception:  # what the agent left is no such database: OSWorld gives None
        return None
    finally:
        connection.close()


def get_history(ctx: GetterContext, config: dict[str, Any]) -> Any:
    """Chrome's history as (url, title, last_visit_time) rows, or None."""
    return _query(ctx, config, "History", "SELECT url, title, last_visit_time FROM urls")


def get_cookie_data(ctx: GetterContext, config: dict[str, Any]) -> Any:
    """Every row of Chrome's cookies table, or None."""
    return _query(ctx, config, "Cookies", "SELECT * FROM cookies")


CHROME_PROFILE_GETTERS: dict[str, Getter] = {
    "default_search_engine": _from_preferences(_search_engine, "Google"),
    "profile_name": _from_preferences(_profile_name, None),
    "chrome_font_size": _from_preferences(
        _font_size, {"default_fixed_font_size": 13, "default_font_size": 16}
    ),
    "enable_do_not_track": _from_preferences(_do_not_track, "false"),
    "enable_safe_browsing": _from_preferences(_safe_browsing, "false"),
    "new_startup_page": _from_preferences(_new_startup_page, "Google"),
    "find_unpacked_extension_path": _from_preferences(_extension_paths, "Google"),
    "find_installed_extension_name": _from_preferences(_extension_names, "Google"),
    "data_delete_automacally": _from_preferences(_delete_on_exit, "Google"),
    "bookmarks": get_bookmarks,
    "history": get_history,
    "cookie_data": get_cookie_data,
}
"""The Chrome profile getters, by OSWorld's type name (its odd spellings kept)."""
