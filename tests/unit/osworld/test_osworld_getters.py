"""The pure parts of OSWorld's getters (dates, folder listings, slide relationships) and
the getters' error policy on a local guest in a temporary home."""

from __future__ import annotations

import io
import json
import sqlite3
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from cleanroom.core.outcomes import Status
from cleanroom.guests.local import LocalGuest
from cleanroom.verifiers.osworld.evaluator import check_task
from cleanroom.verifiers.osworld.getters import (
    GETTERS,
    NOT_IMPLEMENTED,
    GetterContext,
    GetterFailed,
    UnreadableResult,
)
from cleanroom.verifiers.osworld.getters.desktop_files import (
    Entry,
    build_tree,
    parse_listing,
    wallpaper_path,
)
from cleanroom.verifiers.osworld.getters.relative_time import (
    UnknownPhrase,
    format_day,
    resolve_relative_time,
    timezone_of,
)
from cleanroom.verifiers.osworld.getters.slides import (
    Linked,
    Member,
    audio_target,
    background_target,
)
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task import parse_task
from cleanroom.verifiers.osworld.task_cache import TaskCache

# --- rule_relativeTime ----------------------------------------------------------------

WEDNESDAY = datetime(2025, 1, 15, 9, 30, tzinfo=ZoneInfo("UTC"))


def test_format_day_fills_each_placeholder_once() -> None:
    day = datetime(2025, 3, 7)
    assert format_day("{DoW}, {Month} {Day0D} {Year} {DoW}", day) == "Fri, Mar 07 2025 {DoW}"


def test_format_day_pads_only_the_zero_padded_placeholders() -> None:
    day = datetime(2025, 3, 7)
    assert format_day("{Month0D}/{MonthD}/{DayD}/{Day0D}", day) == "03/3/7/07"


def test_format_day_spells_months_three_ways() -> None:
    assert format_day("{Month} {month} {MonthFull}", datetime(2025, 9, 1)) == (
        "Sep september September"
    )


def test_next_monday_from_a_wednesday_is_five_days_on() -> None:
    rules = {"relativeTime": {"from": "next Monday"}, "expected": {"time": "{DayD}"}}
    assert resolve_relative_time(rules, WEDNESDAY)["expected"]["time"] == "20"


def test_resolving_leaves_the_task_rules_unchanged() -> None:
    rules = {"relativeTime": {"from": "tomorrow"}, "expected": {"time": "{DayD}"}}
    resolved = resolve_relative_time(rules, WEDNESDAY)
    assert rules["expected"]["time"] == "{DayD}" and resolved["expected"]["time"] == "16"


def test_a_range_fills_from_and_to() -> None:
    rules = {
        "relativeTime": {"from": "next week Friday", "to": "next week Sunday"},
        "expected": {"from": "{DoW} {DayD}", "to": "{DoW} {DayD}"},
    }
    assert resolve_relative_time(rules, WEDNESDAY)["expected"] == {
        "from": "Fri 24",
        "to": "Sun 26",
    }


def test_split_phrases_fill_day_month_and_year_keys() -> None:
    rules = {
        "relativeTime": {"from": "next Monday split", "to": "next Friday split"},
        "expected": dict.fromkeys(["puDay", "doDay"], "{DayD}")
        | dict.fromkeys(["puMonth", "doMonth"], "{MonthD}")
        | dict.fromkeys(["puYear", "doYear"], "{Year}"),
    }
    expected = resolve_relative_time(rules, WEDNESDAY)["expected"]
    assert (expected["puDay"], expected["doDay"], expected["doMonth"]) == ("20", "24", "1")


def test_tenth_next_month_crosses_the_year_in_december() -> None:
    rules = {"relativeTime": {"from": "10th next month"}, "expected": {"time": "{Year}-{Month0D}"}}
    december = datetime(2025, 12, 20, tzinfo=ZoneInfo("UTC"))
    assert resolve_relative_time(rules, december)["expected"]["time"] == "2026-01"


def test_first_monday_four_months_later_has_no_answer_in_august() -> None:
    rules = {"relativeTime": {"from": "first monday four months later"}, "expected": {"time": ""}}
    with pytest.raises(UnknownPhrase):
        resolve_relative_time(rules, datetime(2025, 8, 1, tzinfo=ZoneInfo("UTC")))


def test_a_phrase_osworld_does_not_handle_alone_fails() -> None:
    rules = {"relativeTime": {"from": "this Saturday"}, "expected": {"time": "{DayD}"}}
    with pytest.raises(GetterFailed):
        resolve_relative_time(rules, WEDNESDAY)


def test_an_expected_value_that_is_no_string_fails() -> None:
    rules = {"relativeTime": {"from": "tomorrow"}, "expected": {"time": ["{DayD}"]}}
    with pytest.raises(GetterFailed):
        resolve_relative_time(rules, WEDNESDAY)


def test_time_zone_names_are_looked_up_without_case() -> None:
    assert timezone_of({"timezone": "europe/ZURICH"}) == ZoneInfo("Europe/Zurich")


def test_an_unknown_or_absent_time_zone_is_utc() -> None:
    assert timezone_of({"timezone": "Nowhere/Else"}) == ZoneInfo("UTC")
    assert timezone_of({}) == ZoneInfo("UTC")


def test_the_host_zone_alias_is_no_time_zone_name() -> None:
    assert timezone_of({"timezone": "localtime"}) == ZoneInfo("UTC")


# --- list_directory -------------------------------------------------------------------


def test_parse_listing_keeps_undecodable_names() -> None:
    assert parse_listing(b"d\t\0f\tx\xff\0") == [Entry("d", ""), Entry("f", "x\udcff")]


def test_build_tree_nests_entries_under_their_folders() -> None:
    entries = [Entry("d", ""), Entry("d", "sub"), Entry("f", "sub/a.jpg"), Entry("l", "link")]
    assert build_tree("/home/user/jpgs", "jpgs", entries) == {
        "type": "directory",
        "name": "jpgs",
        "children": [
            {"type": "directory", "name": "sub", "children": [{"type": "file", "name": "a.jpg"}]},
            {"type": "file", "name": "link"},
        ],
    }


def test_build_tree_marks_a_folder_it_cannot_read_as_osworld_does() -> None:
    tree = build_tree("/h/x", "x", [Entry("d", ""), Entry("e", "locked")])
    assert tree["children"] == [{"error": "[Errno 13] Permission denied: '/h/x/locked'"}]


def test_wallpaper_path_drops_the_scheme_and_quotes_only() -> None:
    assert wallpaper_path("'file:///home/user/my%20pic.png'\n") == "/home/user/my%20pic.png"


# --- audio_in_slide and background_image_in_slide -------------------------------------

RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
AUDIO = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/audio"
IMAGE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/image"
SLIDE = (
    '<p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
    '<p:cSld><p:bg><p:bgPr><a:blipFill><a:blip r:embed="rId7"/></a:blipFill></p:bgPr></p:bg>'
    "</p:cSld></p:sld>"
)


def archive(relations: list[tuple[str, str, str]], slide: str = SLIDE) -> zipfile.ZipFile:
    body = "".join(f'<Relationship Id="{i}" Type="{t}" Target="{x}"/>' for i, t, x in relations)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("ppt/slides/slide1.xml", slide)
        zf.writestr(
            "ppt/slides/_rels/slide1.xml.rels",
            f'<Relationships xmlns="{RELS}">{body}</Relationships>',
        )
    return zipfile.ZipFile(buffer)


def test_audio_inside_the_presentation_is_a_member() -> None:
    found = audio_target(archive([("rId1", AUDIO, "../media/media1.wav")]), 0)
    assert found == Member("ppt/media/media1.wav")


def test_linked_audio_is_a_guest_path() -> None:
    found = audio_target(archive([("rId1", AUDIO, "file:///home/user/a.mp3")]), 0)
    assert found == Linked("/home/user/a.mp3")


def test_the_first_audio_relationship_wins() -> None:
    relations = [("rId1", AUDIO, "../media/a.wav"), ("rId2", AUDIO, "../media/b.wav")]
    assert audio_target(archive(relations), 0) == Member("ppt/media/a.wav")


def test_no_audio_relationship_is_none() -> None:
    assert audio_target(archive([("rId1", IMAGE, "../media/a.png")]), 0) is None


def test_a_target_neither_inside_nor_a_file_url_is_refused() -> None:
    with pytest.raises(ValueError):
        audio_target(archive([("rId1", AUDIO, "media/a.wav")]), 0)


def test_the_background_is_the_image_its_picture_names() -> None:
    relations = [("rId1", IMAGE, "../media/other.png"), ("rId7", IMAGE, "../media/bg.png")]
    assert background_target(archive(relations), 0) == Member("ppt/media/bg.png")


def test_a_slide_without_a_background_picture_has_none() -> None:
    slide = SLIDE.replace('r:embed="rId7"', "")
    assert background_target(archive([("rId7", IMAGE, "../media/bg.png")], slide), 0) is None


def test_a_slide_the_presentation_lacks_has_no_background() -> None:
    assert background_target(archive([]), 3) is None


# --- on a local guest -----------------------------------------------------------------


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[GetterContext]:
    guest = LocalGuest(home=str(tmp_path / "home"))
    cache = TaskCache(str(tmp_path / "cache"), "task")
    cache.reset()
    yield GetterContext(guest, CheckSettings(getter_timeout=10), cache)
    guest.close()


def profile(ctx: GetterContext, name: str, data: bytes) -> Path:
    path = Path(ctx.guest.home) / ".config/google-chrome/Default" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_every_getter_type_of_the_task_set_is_implemented_or_explained() -> None:
    used = {"vm_file", "cloud_file", "rule", "rule_relativeTime", "googledrive_file"}
    assert used <= set(GETTERS) | set(NOT_IMPLEMENTED)
    assert "googledrive_file" in NOT_IMPLEMENTED


def test_a_missing_preferences_file_gives_osworlds_fallback(ctx: GetterContext) -> None:
    assert GETTERS["default_search_engine"](ctx, {}) == "Google"
    assert GETTERS["new_startup_page"](ctx, {}) == "Google"


def test_preferences_are_read(ctx: GetterContext) -> None:
    profile(ctx, "Preferences", json.dumps({"profile": {"name": "Ann"}}).encode())
    assert GETTERS["profile_name"](ctx, {}) == "Ann"
    assert GETTERS["new_startup_page"](ctx, {}) == "true"  # no session at all


def test_bookmarks_that_are_no_json_are_unreadable(ctx: GetterContext) -> None:
    profile(ctx, "Bookmarks", b'{"roots": ')
    with pytest.raises(UnreadableResult):
        GETTERS["bookmarks"](ctx, {})


def test_history_is_read_from_a_copy_in_the_cache(ctx: GetterContext, tmp_path: Path) -> None:
    made = tmp_path / "made.sqlite"
    with sqlite3.connect(made) as db:
        db.execute("CREATE TABLE urls (url, title, last_visit_time)")
        db.execute("INSERT INTO urls VALUES ('https://a', 'A', 7)")
    db.close()
    original = profile(ctx, "History", made.read_bytes())
    rows = GETTERS["history"](ctx, {"dest": "history.sqlite"})
    assert rows == [("https://a", "A", 7)]
    assert (Path(ctx.cache.dir) / "history.sqlite").read_bytes() == original.read_bytes()
    assert sorted(p.name for p in original.parent.iterdir()) == ["History"]  # nothing added


def test_history_that_is_no_database_is_none(ctx: GetterContext) -> None:
    profile(ctx, "History", b"not a database at all")
    assert GETTERS["history"](ctx, {"dest": "history.sqlite"}) is None


def test_a_linked_preferences_file_is_not_followed(ctx: GetterContext, tmp_path: Path) -> None:
    answer = tmp_path / "answer.json"
    answer.write_text('{"profile": {"name": "Ann"}}')
    folder = profile(ctx, "Bookmarks", b"").parent
    (folder / "Preferences").symlink_to(answer)
    assert GETTERS["profile_name"](ctx, {}) is None


def test_list_directory_of_a_missing_folder_is_a_missing_result(ctx: GetterContext) -> None:
    with pytest.raises(FileNotFoundError):
        GETTERS["list_directory"](ctx, {"path": "Desktop/cpjpg"})


def test_list_directory_lists_a_link_as_a_file(ctx: GetterContext, tmp_path: Path) -> None:
    folder = Path(ctx.guest.home) / "jpgs"
    folder.mkdir()
    (folder / "a.jpg").write_bytes(b"x")
    (folder / "elsewhere").symlink_to(tmp_path)
    tree = GETTERS["list_directory"](ctx, {"path": str(folder)})
    assert sorted(c["name"] for c in tree["children"]) == ["a.jpg", "elsewhere"]
    assert all(c["type"] == "file" for c in tree["children"])


def test_a_vlcrc_is_copied_to_dest(ctx: GetterContext) -> None:
    vlcrc = Path(ctx.guest.home) / ".config/vlc/vlcrc"
    vlcrc.parent.mkdir(parents=True)
    vlcrc.write_bytes(b"[qt]\nqt-minimal-view=1\n")
    assert GETTERS["vlc_config"](ctx, {"dest": "vlcrc"}).data == b"[qt]\nqt-minimal-view=1\n"


def test_an_empty_gimp_config_file_is_none(ctx: GetterContext) -> None:
    gimprc = Path(ctx.guest.home) / ".config/GIMP/2.10/gimprc"
    gimprc.parent.mkdir(parents=True)
    gimprc.write_bytes(b"")
    assert GETTERS["gimp_config_file"](ctx, {"file_name": "gimprc", "dest": "gimprc"}) is None


def test_a_presentation_that_is_no_zip_is_unreadable(ctx: GetterContext) -> None:
    (Path(ctx.guest.home) / "talk.pptx").write_bytes(b"PK no zip")
    config = {"ppt_file_path": "~/talk.pptx", "slide_index": 0, "dest": "a.wav"}
    with pytest.raises(UnreadableResult):
        GETTERS["audio_in_slide"](ctx, config)


def test_an_unreadable_result_file_scores_zero_not_invalid(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".config/google-chrome/Default").mkdir(parents=True)
    (home / ".config/google-chrome/Default/Bookmarks").write_bytes(b"{")
    evaluator: dict[str, Any] = {
        "func": "exact_match",
        "result": {"type": "bookmarks"},
        "expected": {"type": "rule", "rules": {"expected": {}}},
    }
    task = parse_task({"id": "t", "config": [], "evaluator": evaluator}, "t.json")
    with LocalGuest(home=str(home)) as guest:
        outcome = check_task(task, guest, CheckSettings(cache_root=str(tmp_path / "cache")))
    assert outcome.status is Status.FAILURE and outcome.score == 0.0


def test_relative_time_uses_the_clock_of_the_rules_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    from cleanroom.verifiers.osworld.getters import relative_time

    class Late(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return datetime(2025, 1, 15, 23, 30, tzinfo=UTC).astimezone(tz)

    monkeypatch.setattr(relative_time, "datetime", Late)
    rules = {"relativeTime": {"from": "tomorrow"}, "expected": {"time": "{DayD}"}}
    tokyo = {**rules, "timezone": "Asia/Tokyo"}
    assert GETTERS["rule_relativeTime"](None, {"rules": rules})["expected"]["time"] == "16"
    assert GETTERS["rule_relativeTime"](None, {"rules": tokyo})["expected"]["time"] == "17"
