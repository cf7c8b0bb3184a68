"""Each deliberate difference, shown happening; and the documentation page listing them.

A difference in the table that no longer happens, or one that happens in another way
than described, fails here; so does a page that says something else than the table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

pytest.importorskip("desktop_env")

from cleanroom.guests import local
from cleanroom.verifiers.osworld import getters as our_getters
from cleanroom.verifiers.osworld import metrics as ours
from cleanroom.verifiers.osworld.getters import relative_time, vlc_status

from .differences import DELIBERATE
from .fake_vm import Sides, VlcWeb
from .reference import REPO, Files, Raised, call_cleanroom, call_osworld, osworld
from .test_getters_desktop import (
    AUDIO_TYPE,
    desktop_settings,
    presentation,
    rels_xml,
    set_wallpaper,
)
from .test_getters_profiles import PROFILE, place
from .test_getters_relative_time import FrozenClock, both

PAGE = REPO / "docs" / "verifiers" / "osworld-differences.md"


def metric(name: str, ours_args: tuple[Any, ...], their_args: tuple[Any, ...]) -> tuple[Any, Any]:
    return (
        call_cleanroom(ours.METRICS[name], *ours_args),
        call_osworld(osworld().metrics[name], *their_args),
    )


def favourites(files: Files, sides: Sides) -> None:
    output = "['thunderbird.desktop'] + ['google-chrome.desktop']"
    rule = {"expected": ["google-chrome.desktop", "thunderbird.desktop"]}
    assert metric("check_gnome_favorite_apps", (output, rule), (output, rule)) == (
        Raised("ValueError"),
        1,
    )


def not_utf8_file(files: Files, sides: Sides) -> None:
    path, cached = files.pair(b"\xffproject")
    rule = {"expected": "project"}
    mine, theirs = metric("compare_config", (cached, rule), (path, rule))
    assert (mine, theirs) == (0.0, Raised("UnicodeDecodeError"))


def spreadsheet_range(files: Files, sides: Sides) -> None:
    path, cached = files.pair(json.dumps({"range": ["A1"]}).encode())
    rules = {"expect": [{"key": ["range"], "method": "spreadsheet_range", "ref": ["A1", "B2"]}]}
    mine, theirs = metric("check_json", (cached, rules), (path, rules))
    assert (mine, theirs) == (Raised("UnsupportedRule"), 0.0)


def cannot_start(files: Files, sides: Sides) -> None:
    assert sides.run("vm_command_line", {"command": ["no-such-program-here"]}) == (
        Raised("CommandNotStarted"),
        None,
    )


def time_limit(files: Files, sides: Sides) -> None:
    assert sides.run("vm_command_error", {"command": ["sleep", "5"]}) == (
        Raised("GuestTimeout"),
        None,
    )


def missing_single(files: Files, sides: Sides) -> None:
    config = {"path": "~/Desktop/output.csv", "dest": "output.csv"}
    assert sides.run("vm_file", config) == (Raised("FileNotFoundError"), None)


def symlink(files: Files, sides: Sides) -> None:
    (sides.home / "gold.csv").write_bytes(b"the answer\n")
    (sides.home / "output.csv").symlink_to(sides.home / "gold.csv")
    config = {"path": "~/output.csv", "dest": "output.csv"}
    assert sides.run("vm_file", config) == (
        Raised("FileNotFoundError"),
        ("file", "output.csv", b"the answer\n"),
    )


def variables(files: Files, sides: Sides) -> None:
    (sides.home / "output.csv").write_bytes(b"a,b\n")
    config = {"path": "$HOME/output.csv", "dest": "output.csv"}
    assert sides.run("vm_file", config) == (
        Raised("FileNotFoundError"),
        ("file", "output.csv", b"a,b\n"),
    )


def unwritable_dest(files: Files, sides: Sides) -> None:
    (sides.home / "output.csv").write_bytes(b"a,b\n")
    config = {"path": "~/output.csv", "dest": "results/output.csv"}
    assert sides.run("vm_file", config) == (Raised("GetterFailed"), None)


def outside(files: Files, sides: Sides) -> None:
    (sides.home / "output.csv").write_bytes(b"a,b\n")
    config = {"path": "~/output.csv", "dest": "../output.csv"}
    assert sides.run("vm_file", config) == (
        Raised("GetterFailed"),
        ("file", "../output.csv", b"a,b\n"),
    )


def unequal(files: Files, sides: Sides) -> None:
    (sides.home / "a.csv").write_bytes(b"a\n")
    config = {"path": ["~/a.csv", "~/b.csv"], "dest": ["a.csv"], "multi": True}
    assert sides.run("vm_file", config) == (Raised("GetterFailed"), ("file", "a.csv", b"a\n"))


def one_dest(files: Files, sides: Sides) -> None:
    (sides.home / "first.txt").write_bytes(b"first\n")
    (sides.home / "second.txt").write_bytes(b"second\n")
    first = our_getters.get_vm_file(sides.ctx, {"path": "~/first.txt", "dest": "x.txt"})
    our_getters.get_vm_file(sides.ctx, {"path": "~/second.txt", "dest": "x.txt"})
    env = sides.env()
    first_path = osworld().getters["vm_file"](env, {"path": "~/first.txt", "dest": "x.txt"})
    osworld().getters["vm_file"](env, {"path": "~/second.txt", "dest": "x.txt"})
    assert first.data == b"first\n"
    assert Path(first_path).read_bytes() == b"second\n"


def not_200(files: Files, sides: Sides) -> None:
    sides.downloads.table["/no-content"] = (204, b"")
    config = {"path": sides.downloads.url("/no-content"), "dest": "gold.csv"}
    assert sides.run("cloud_file", config) == (Raised("GetterFailed"), ("file", "gold.csv", b""))


def no_timezone(files: Files, sides: Sides) -> None:
    misc = osworld().getter_modules["misc"]
    FrozenClock.instant = datetime(2025, 3, 3, 12, tzinfo=UTC)  # Monday; Tuesday in Kiritimati
    rules = {"relativeTime": {"from": "tomorrow"}, "expected": {"time": "{DoW}"}}
    with (
        mock.patch.object(relative_time, "datetime", FrozenClock),
        mock.patch.object(misc, "datetime", FrozenClock),
        mock.patch.object(misc, "get_timezone_from_ip", lambda: "Pacific/Kiritimati"),
    ):
        mine, theirs = both({"rules": rules})
    assert (mine["expected"]["time"], theirs["expected"]["time"]) == ("Tue", "Wed")


def vlcrc_missing(files: Files, sides: Sides) -> None:
    assert sides.run("vlc_config", {"dest": "vlcrc"}) == (
        Raised("FileNotFoundError"),
        Raised("TypeError"),
    )


def vlc_silent(files: Files, sides: Sides) -> None:
    web = VlcWeb()
    port = web.port
    web.close()
    with mock.patch.object(vlc_status, "PORT", port):
        answers = sides.run("vlc_playing_info", {"dest": "status.xml"}, vlc_port=port)
    assert answers == (Raised("VlcNotAnswering"), Raised("ConnectionError"))


def gimp_missing(files: Files, sides: Sides) -> None:
    config = {"file_name": "gimprc", "dest": "gimprc"}
    assert sides.run("gimp_config_file", config) == (Raised("FileNotFoundError"), None)


def profile_link(files: Files, sides: Sides) -> None:
    (sides.elsewhere / "Preferences").write_text('{"profile": {"name": "Ann"}}')
    place(sides, "Preferences", None)
    (sides.home / PROFILE / "Preferences").symlink_to(sides.elsewhere / "Preferences")
    assert sides.run("profile_name", {}) == (None, "Ann")


def folder_link(files: Files, sides: Sides) -> None:
    (sides.home / "jpgs").mkdir()
    (sides.home / "jpgs" / "inner").symlink_to(sides.elsewhere)
    mine, theirs = sides.run("list_directory", {"path": str(sides.home / "jpgs")})
    assert mine["children"] == [{"type": "file", "name": "inner"}]
    assert theirs["children"] == [{"type": "directory", "name": "inner", "children": []}]


def no_folder(files: Files, sides: Sides) -> None:
    config = {"path": str(sides.home / "Desktop" / "cpjpg")}
    assert sides.run("list_directory", config) == (Raised("FileNotFoundError"), None)


def unreadable_shortcut(files: Files, sides: Sides) -> None:
    (sides.home / "Desktop").mkdir(exist_ok=True)
    (sides.home / "Desktop" / "Chrome.desktop").write_bytes(b"\xff[Desktop Entry]\n")
    assert sides.run("shortcuts_on_desktop", {}) == (
        Raised("UnreadableResult"),
        Raised("UnicodeDecodeError"),
    )


def no_xdg_mime(files: Files, sides: Sides) -> None:
    empty = str(sides.elsewhere)
    saved = sides.vm.environment
    sides.vm.environment = {**saved, "PATH": empty}
    try:
        with (
            mock.patch.object(local, "_USER_PATH", empty),
            mock.patch.object(local, "_ROOT_PATH", empty),
        ):
            assert sides.run("default_video_player", {}) == (
                Raised("CommandNotStarted"),
                "unknown",
            )
    finally:
        sides.vm.environment = saved


def unreadable_wallpaper(files: Files, sides: Sides) -> None:
    with desktop_settings(sides) as both:
        set_wallpaper(both, f"'file://{both.home}/gone.png'")
        assert both.run("vm_wallpaper", {"dest": "bg.png"}) == (
            Raised("FileNotFoundError"),
            ("file", "bg.png", b""),
        )


def no_gsettings(files: Files, sides: Sides) -> None:
    with desktop_settings(sides, XDG_DATA_DIRS=str(sides.elsewhere)) as both:
        assert both.run("vm_wallpaper", {"dest": "bg.png"}) == (
            Raised("GetterFailed"),
            ("file", "bg.png", b""),
        )


def bookmarks_not_json(files: Files, sides: Sides) -> None:
    place(sides, "Bookmarks", b'{"roots": ')
    assert sides.run("bookmarks", {}) == (Raised("UnreadableResult"), Raised("JSONDecodeError"))


def no_dest(files: Files, sides: Sides) -> None:
    assert sides.run("history", {}) == (Raised("GetterFailed"), None)


def unreadable_presentation(files: Files, sides: Sides) -> None:
    (sides.home / "talk.pptx").write_bytes(b"PK but no zip")
    config = {"ppt_file_path": str(sides.home / "talk.pptx"), "slide_index": 0, "dest": "a"}
    mine, theirs = sides.run("audio_in_slide", config)
    assert mine == Raised("UnreadableResult") and theirs == Raised("BadZipFile")


def linked_outside(files: Files, sides: Sides) -> None:
    (sides.elsewhere / "answer.wav").write_bytes(b"RIFF")
    rels = [("rId1", AUDIO_TYPE, f"file://{sides.elsewhere}/answer.wav")]
    members = {"ppt/slides/_rels/slide1.xml.rels": rels_xml(rels)}
    (sides.home / "talk.pptx").write_bytes(presentation(members))
    config = {"ppt_file_path": str(sides.home / "talk.pptx"), "slide_index": 0, "dest": "a.wav"}
    assert sides.run("audio_in_slide", config) == (
        Raised("FileNotFoundError"),
        ("file", "a.wav", b"RIFF"),
    )


SHOWN: dict[str, Callable[[Files, Sides], None]] = {
    "check_gnome_favorite_apps: output that is no Python literal": favourites,
    "text metrics: a result file that is not UTF-8": not_utf8_file,
    "check_json: the spreadsheet_range rule": spreadsheet_range,
    "vm_command_line, vm_command_error: a command that cannot start": cannot_start,
    "vm_command_line, vm_command_error: the time limit": time_limit,
    "vm_file: a missing file (not multi)": missing_single,
    "vm_file: a symbolic link": symlink,
    "vm_file: a path with $VARIABLES": variables,
    "vm_file: a dest OSWorld cannot write": unwritable_dest,
    "vm_file, cloud_file, cache_file: a name outside the task cache": outside,
    "vm_file, cloud_file: multi lists of different lengths": unequal,
    "vm_file: two getters with one dest": one_dest,
    "cloud_file: a 2xx answer other than 200": not_200,
    "rule_relativeTime: rules without a timezone": no_timezone,
    "vlc_config: a missing vlcrc": vlcrc_missing,
    "vlc_playing_info: nothing answers on VLC's web interface": vlc_silent,
    "gimp_config_file: a missing config file": gimp_missing,
    "Chrome profile getters, vlc_config, gimp_config_file, shortcuts_on_desktop, "
    "vm_wallpaper: a symbolic link": profile_link,
    "list_directory: a symbolic link to a folder": folder_link,
    "list_directory: a path that is no folder": no_folder,
    "shortcuts_on_desktop: a desktop folder or shortcut that cannot be read": unreadable_shortcut,
    "default_video_player: xdg-mime cannot start": no_xdg_mime,
    "vm_wallpaper: a wallpaper file that cannot be read": unreadable_wallpaper,
    "vm_wallpaper: gsettings fails": no_gsettings,
    "bookmarks: a Bookmarks file that is no JSON object": bookmarks_not_json,
    "history, cookie_data: a config without dest": no_dest,
    "audio_in_slide, background_image_in_slide: a presentation that is missing or cannot "
    "be read": unreadable_presentation,
    "audio_in_slide, background_image_in_slide: a linked file missing or outside the "
    "home": linked_outside,
}


def test_every_difference_is_shown() -> None:
    assert set(SHOWN) == set(DELIBERATE)


@pytest.mark.parametrize("name", sorted(DELIBERATE))
def test_difference_happens(files: Files, fresh: Sides, name: str) -> None:
    SHOWN[name](files, fresh)


def _page_rows() -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if not line.startswith("| ") or len(cells) != 2 or set(cells[0]) <= {"-", ":", " "}:
            continue
        rows[cells[0]] = cells[1]
    rows.pop("Metric or getter: case", None)  # the header
    return rows


def test_the_documentation_lists_the_same_differences() -> None:
    def words(text: str) -> str:
        return re.sub(r"\s+", " ", text).strip()

    page = {words(k): words(v) for k, v in _page_rows().items()}
    table = {words(k): words(v) for k, v in DELIBERATE.items()}
    assert page == table
