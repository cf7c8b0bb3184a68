"""Each deliberate difference, shown happening; and the documentation page listing them.

A difference in the table that no longer happens, or one that happens in another way
than described, fails here; so does a page that says something else than the table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("desktop_env")

from cleanroom.verifiers.osworld import getters as our_getters
from cleanroom.verifiers.osworld import metrics as ours

from .differences import DELIBERATE
from .fake_vm import Sides
from .reference import REPO, Files, Raised, call_cleanroom, call_osworld, osworld

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
