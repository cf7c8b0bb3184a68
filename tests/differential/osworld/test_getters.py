"""Every getter cleanroom implements against OSWorld's own, on one machine.

OSWorld's getters talk to a `FakeVm` serving a local home folder (and, through OSWorld's
own ``PythonController``, its files); cleanroom's use a local guest on the same folder.
Each side has its own task cache. File values are compared as (name in the cache, bytes).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("desktop_env")

from hypothesis import given
from hypothesis import strategies as st

from cleanroom.verifiers.osworld import getters as our_getters
from cleanroom.verifiers.osworld import metrics as ours
from cleanroom.verifiers.osworld.getters import core as getters_core
from cleanroom.verifiers.osworld.task import load_task

from .differences import DELIBERATE
from .fake_vm import Sides
from .reference import (
    EXAMPLES,
    TASK_FILES,
    Raised,
    call_cleanroom,
    call_osworld,
    osworld,
)

CANNOT_START = "vm_command_line, vm_command_error: a command that cannot start"
TIME_LIMIT = "vm_command_line, vm_command_error: the time limit"
MISSING_SINGLE = "vm_file: a missing file (not multi)"
SYMLINK = "vm_file: a symbolic link"
VARIABLES = "vm_file: a path with $VARIABLES"
UNWRITABLE_DEST = "vm_file: a dest OSWorld cannot write"
OUTSIDE = "vm_file, cloud_file, cache_file: a name outside the task cache"
UNEQUAL = "vm_file, cloud_file: multi lists of different lengths"
NOT_200 = "cloud_file: a 2xx answer other than 200"


def same(what: str, mine: Any, theirs: Any, case: Any, differ: str | None = None) -> None:
    """Equal values, both raised, or a difference named in DELIBERATE (``differ``)."""
    if mine == theirs or (isinstance(mine, Raised) and isinstance(theirs, Raised)):
        return
    if differ is not None:
        assert differ in DELIBERATE, differ
        return
    raise AssertionError(f"{what} disagrees on {case!r}: cleanroom {mine!r}, OSWorld {theirs!r}")


# --- vm_command_line / vm_command_error -------------------------------------------------------

OUTPUT = st.one_of(
    st.lists(st.sampled_from(["a", " ", "\n", "\r\n", "\r", "é", "\t", "İ", "\x00", "\x0c"]))
    .map("".join)
    .map(str.encode),
    st.binary(max_size=8),
)
PRINT_BOTH = "cat out.bin; cat err.bin >&2; exit {code}"
COMMAND_FORMS = {
    "shell string": lambda code: {"command": PRINT_BOTH.format(code=code), "shell": True},
    "shell 'true'": lambda code: {"command": PRINT_BOTH.format(code=code), "shell": "true"},
    "shell 'false' (truthy)": lambda code: {
        "command": PRINT_BOTH.format(code=code),
        "shell": "false",
    },
    "split string": lambda code: {"command": f"sh -c '{PRINT_BOTH.format(code=code)}'"},
    "list": lambda code: {"command": ["sh", "-c", PRINT_BOTH.format(code=code)]},
    "list with a shell": lambda code: {
        "command": [PRINT_BOTH.format(code=code), "arg0"],
        "shell": True,
    },
    "list with ~/": lambda code: {"command": ["cat", "~/out.bin"]},
}


@EXAMPLES
@given(
    out=OUTPUT,
    err=OUTPUT,
    code=st.integers(0, 2),
    form=st.sampled_from(sorted(COMMAND_FORMS)),
    getter=st.sampled_from(["vm_command_line", "vm_command_error"]),
)
def test_command_getters(
    sides: Sides, out: bytes, err: bytes, code: int, form: str, getter: str
) -> None:
    sides.reset()
    (sides.home / "out.bin").write_bytes(out)
    (sides.home / "err.bin").write_bytes(err)
    config = COMMAND_FORMS[form](code)
    mine, theirs = sides.run(getter, config)
    same(getter, mine, theirs, (config, out, err), None)


COMMAND_CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("no such program", {"command": ["no-such-program-here"]}, CANNOT_START),
    ("no such program, split", {"command": "no-such-program-here --x"}, CANNOT_START),
    ("empty list", {"command": []}, CANNOT_START),
    ("empty string, no shell", {"command": ""}, CANNOT_START),
    ("empty string, shell", {"command": "", "shell": True}, None),
    ("past the limit", {"command": ["sleep", "5"]}, TIME_LIMIT),
    ("items that are no strings", {"command": ["echo", 1]}, None),
    ("no command", {"shell": True}, None),
    ("a string shlex cannot split", {"command": "echo 'unterminated"}, None),
    ("shell 1", {"command": "echo $((1+1))", "shell": 1}, None),
    ("shell ''", {"command": "echo $((1+1))", "shell": ""}, None),
    ("shell 0", {"command": ["echo", "$HOME"], "shell": 0}, None),
    ("shell None", {"command": "echo a b", "shell": None}, None),
    ("~/ items", {"command": ["echo", "~/x", "a~/b", "~", "~root/x"]}, None),
    ("the home and working folder", {"command": "echo $HOME; pwd; echo ~", "shell": True}, None),
    ("the environment", {"command": ["env"]}, None),
    ("stdout and stderr", {"command": "echo out; echo err >&2; exit 3", "shell": True}, None),
    ("carriage returns", {"command": "printf 'a\\r\\nb\\rc\\r'", "shell": True}, None),
    ("no trailing newline", {"command": ["printf", "%s", "x"]}, None),
]


@pytest.mark.parametrize(
    ("case", "config", "differ"), COMMAND_CASES, ids=[c[0] for c in COMMAND_CASES]
)
@pytest.mark.parametrize("getter", ["vm_command_line", "vm_command_error"])
def test_command_getter_cases(
    fresh: Sides, getter: str, case: str, config: dict[str, Any], differ: str | None
) -> None:
    mine, theirs = fresh.run(getter, config)
    if differ is not None:  # the difference is the whole point of the case: it must show
        assert theirs is None and isinstance(mine, Raised), (mine, theirs)
    same(getter, mine, theirs, config, differ)


# Commands of the bundled tasks that read the machine's processes: their output would
# change between the two runs whenever something else starts or stops meanwhile.
def _reads_processes(config: dict[str, Any]) -> bool:
    command = config.get("command")
    text = command if isinstance(command, str) else " ".join(map(str, command or []))
    return "ps aux" in text


BUNDLED_HOMES = {  # what makes a few bundled tasks pass in an otherwise empty home
    "e0df059f-28a6-4169-924f-b9623e7184cc": {"Desktop/todo_list_Jan_2/": b""},
    "48d05431-6cd5-4e76-82eb-12b60d823f7d": {".bashrc": b"# >>> conda initialize >>>\n"},
}


def _bundled_command_getters() -> list[tuple[str, Any, Any, Any]]:
    found = []
    for path in TASK_FILES:
        task = load_task(path)
        for index, call in enumerate(task.evaluator.calls):
            for role, spec, rule_spec in (
                ("result", call.result, call.expected),
                ("expected", call.expected, call.result),
            ):
                if spec is None or spec.type not in ("vm_command_line", "vm_command_error"):
                    continue
                if _reads_processes(spec.config):
                    continue
                found.append((f"{task.id[:8]}-{index}-{role}", task, call, (spec, rule_spec)))
    return found


BUNDLED = _bundled_command_getters()


@pytest.mark.parametrize(("name", "task", "call", "specs"), BUNDLED, ids=[b[0] for b in BUNDLED])
def test_bundled_command_getters(fresh: Sides, name: str, task: Any, call: Any, specs: Any) -> None:
    """Each bundled task's command getter, run by both sides in the same home, then the
    value scored by both sides' metric with the task's rule."""
    spec, rule_spec = specs
    for relative, data in BUNDLED_HOMES.get(task.id, {}).items():
        target = fresh.home / relative
        if relative.endswith("/"):
            target.mkdir(parents=True)
        else:
            target.write_bytes(data)
    mine, theirs = fresh.run(spec.type, spec.config)
    differ = CANNOT_START if theirs is None and isinstance(mine, Raised) else None
    same(name, mine, theirs, spec.config, differ)
    if not isinstance(mine, str) or not isinstance(theirs, str):
        return
    args: tuple[Any, ...] = (mine,)
    if rule_spec is not None:
        rule = rule_spec.config["rules"]
        args = (rule, mine) if spec is call.expected else (mine, rule)
    my_score = call_cleanroom(ours.METRICS[call.func], *args, **call.options)
    their_score = call_osworld(osworld().metrics[call.func], *args, **call.options)
    same(f"{name} {call.func}", my_score, their_score, mine)


# --- vm_file ------------------------------------------------------------------------------

SOURCES = st.sampled_from(["file", "file", "file", "missing", "folder", "link", "dangling link"])
PATH_FORMS = st.sampled_from(["absolute", "absolute", "tilde", "relative", "variable"])
DEST_FORMS = st.sampled_from(
    ["plain", "plain", "plain", "in a folder", "missing folder", "parent", "absolute", "empty"]
)


class FrozenTime(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> FrozenTime:
        return cls(2024, 1, 2, 3, 4, 5)


def _element(sides: Sides, i: int, source: str, form: str, dest_form: str, data: bytes) -> Any:
    name = f"f{i}.bin"
    if source == "file":
        (sides.home / name).write_bytes(data)
    elif source == "folder":
        (sides.home / name).mkdir()
    elif source == "link":
        (sides.home / f"target{i}").write_bytes(data)
        (sides.home / name).symlink_to(sides.home / f"target{i}")
    elif source == "dangling link":
        (sides.home / name).symlink_to(sides.home / "nowhere")
    path = {
        "absolute": str(sides.home / name),
        "tilde": f"~/{name}",
        "relative": name,
        "variable": f"$HOME/{name}",
    }[form]
    dest = {
        "plain": f"d{i}.out",
        "in a folder": f"sub/d{i}.out",
        "missing folder": f"nosub/d{i}.out",
        "parent": f"../d{i}.out",
        "absolute": str(sides.elsewhere / f"d{i}.out"),
        "empty": "",
    }[dest_form]
    return path, dest


def _expected_cleanroom(
    theirs: Any,
    plan: list[tuple[str, str, str]],
    multi: bool,
    n_dests: int,
    gives: list[int],
    time_suffix: bool,
) -> tuple[Any, set[str]]:
    """cleanroom's value as OSWorld's, changed by each deliberate difference that applies
    to this plan, and the names of those differences."""
    keys: set[str] = set()
    if multi and len(plan) != n_dests:
        return Raised("GetterFailed"), {UNEQUAL}
    pairs = plan[: min(len(plan), n_dests)]
    given_indexes = [i for i in range(len(pairs)) if i in gives]
    their_items = [theirs] if len(given_indexes) == 1 else theirs
    assert isinstance(their_items, list) and len(their_items) == len(given_indexes)
    theirs_at = dict(zip(given_indexes, their_items, strict=True))
    values: list[Any] = []
    for i, (source, form, dest_form) in enumerate(pairs):
        cleanroom_reads = source == "file" and form != "variable"
        if not cleanroom_reads:
            if i not in gives:
                continue
            if source == "link" or (source == "file" and form == "variable"):
                keys.add(SYMLINK if source == "link" else VARIABLES)
            if not multi:
                if theirs_at[i] is None:
                    keys.add(MISSING_SINGLE)
                return Raised("FileNotFoundError"), keys
            values.append(None)
            continue
        if dest_form in ("parent", "absolute"):
            return Raised("GetterFailed"), keys | {OUTSIDE}
        if dest_form == "missing folder" or (dest_form == "empty" and not time_suffix):
            return Raised("GetterFailed"), keys | {UNWRITABLE_DEST}
        if i in gives:
            values.append(theirs_at[i])
    return (values[0] if len(values) == 1 else values), keys


@EXAMPLES
@given(
    plan=st.lists(st.tuples(SOURCES, PATH_FORMS, DEST_FORMS), min_size=1, max_size=3),
    multi=st.booleans(),
    extra_dests=st.sampled_from([0, 0, 0, 1, -1]),
    gives=st.none() | st.lists(st.integers(0, 3), max_size=3),
    time_suffix=st.booleans(),
    contents=st.lists(st.binary(max_size=6), min_size=3, max_size=3),
)
def test_vm_file(
    sides: Sides,
    monkeypatch: pytest.MonkeyPatch,
    plan: list[tuple[str, str, str]],
    multi: bool,
    extra_dests: int,
    gives: list[int] | None,
    time_suffix: bool,
    contents: list[bytes],
) -> None:
    sides.reset()
    monkeypatch.setattr(osworld().file_getters, "datetime", FrozenTime)
    monkeypatch.setattr(getters_core, "datetime", FrozenTime)
    (sides.osworld_cache / "sub").mkdir()
    os.makedirs(os.path.join(sides.cache.dir, "sub"))
    if not multi:
        plan = plan[:1]
    dests_paths = [_element(sides, i, *p, contents[i]) for i, p in enumerate(plan)]
    paths = [p for p, _ in dests_paths]
    dests = [d for _, d in dests_paths]
    config: dict[str, Any]
    if multi:
        dests = (
            dests[: len(dests) + extra_dests] if extra_dests < 0 else dests + ["x"] * extra_dests
        )
        config = {"path": paths, "dest": dests, "multi": True}
    else:
        config = {"path": paths[0], "dest": dests[0]}
        if time_suffix:
            config["time_suffix"] = True
    if gives is not None:
        config["gives"] = gives
    mine, theirs = sides.run("vm_file", config)
    if isinstance(theirs, Raised):  # OSWorld crashed: cleanroom must not score either
        assert isinstance(mine, Raised), (config, mine, theirs)
        return
    want, keys = _expected_cleanroom(
        theirs,
        plan,
        multi,
        len(dests) if multi else 1,
        gives if gives is not None else [0],
        time_suffix and not multi,
    )
    assert keys <= set(DELIBERATE), keys
    if not keys:
        assert want == theirs, (config, want, theirs)
    if isinstance(want, Raised):
        assert isinstance(mine, Raised), (config, mine, want, theirs)
        if want.error == "FileNotFoundError":  # or its kind NotARegularFile: both score 0
            assert mine.error in ("FileNotFoundError", "NotARegularFile"), mine
        else:
            assert mine == want, (config, mine, want)
    else:
        assert mine == want, (config, mine, want, theirs)


# --- cache_file ---------------------------------------------------------------------------

CACHE_CASES: list[tuple[str, Any, str | None]] = [
    ("a file", {"path": "ls.out"}, None),
    ("a file in a folder", {"path": "sub/ls.out"}, None),
    ("no such file", {"path": "never.out"}, None),
    ("a folder", {"path": "sub"}, None),
    ("no path", {}, None),
    ("a path outside", {"path": "../outside.out"}, OUTSIDE),
    ("an absolute path", {"path": "ABSOLUTE"}, OUTSIDE),
]


@pytest.mark.parametrize(("case", "config", "differ"), CACHE_CASES, ids=[c[0] for c in CACHE_CASES])
def test_cache_file(fresh: Sides, case: str, config: Any, differ: str | None) -> None:
    for cache in (Path(fresh.cache.dir), fresh.osworld_cache):
        (cache / "sub").mkdir()
        (cache / "ls.out").write_bytes(b"a\nb\n")
        (cache / "sub" / "ls.out").write_bytes(b"c\n")
        (cache.parent / "outside.out").write_bytes(b"outside\n")
    (fresh.elsewhere / "abs.out").write_bytes(b"elsewhere\n")
    if config.get("path") == "ABSOLUTE":
        config = {"path": str(fresh.elsewhere / "abs.out")}
    mine, theirs = fresh.run("cache_file", config)
    if differ is not None:
        assert isinstance(mine, Raised) and not isinstance(theirs, Raised), (mine, theirs)
    same("cache_file", mine, theirs, config, differ)


# --- cloud_file ---------------------------------------------------------------------------

CLOUD_CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("a file", {"path": "/gold.csv", "dest": "gold.csv"}, None),
    ("an empty file", {"path": "/empty", "dest": "empty"}, None),
    ("not found", {"path": "/missing", "dest": "m"}, None),
    ("a server error", {"path": "/broken", "dest": "b"}, None),
    ("a redirect", {"path": "/moved", "dest": "gold.csv"}, None),
    ("204", {"path": "/no-content", "dest": "n"}, NOT_200),
    ("already in the cache", {"path": "/gold.csv", "dest": "cached.csv"}, None),
    (
        "multi",
        {"path": ["/gold.csv", "/other", "/gold.csv"], "dest": ["a", "b", "c"], "multi": True},
        None,
    ),
    (
        "multi with gives",
        {
            "path": ["/gold.csv", "/other", "/gold.csv"],
            "dest": ["a", "b", "c"],
            "multi": True,
            "gives": [2, 0],
        },
        None,
    ),
    ("gives none", {"path": "/gold.csv", "dest": "a", "gives": []}, None),
    (
        "multi, one more dest",
        {"path": ["/gold.csv"], "dest": ["a", "b"], "multi": True, "gives": [0, 1]},
        UNEQUAL,
    ),
    ("a dest outside", {"path": "/gold.csv", "dest": "../x.csv"}, OUTSIDE),
    ("a dest in a missing folder", {"path": "/gold.csv", "dest": "nosub/x.csv"}, None),
    ("a dest in a folder", {"path": "/gold.csv", "dest": "sub/x.csv"}, None),
    ("no server", {"path": "http://127.0.0.1:9/x", "dest": "x"}, None),
    ("no dest", {"path": "/gold.csv"}, None),
]


@pytest.mark.parametrize(("case", "config", "differ"), CLOUD_CASES, ids=[c[0] for c in CLOUD_CASES])
def test_cloud_file(fresh: Sides, case: str, config: dict[str, Any], differ: str | None) -> None:
    table = fresh.downloads.table
    table.update(
        {
            "/gold.csv": b"Name,Age\nAnn,3\n",
            "/other": b"other\n",
            "/empty": b"",
            "/broken": (500, b"oops"),
            "/moved": ("redirect", "/gold.csv"),
            "/no-content": (204, b""),
        }
    )
    for cache in (Path(fresh.cache.dir), fresh.osworld_cache):
        (cache / "sub").mkdir()
        (cache / "cached.csv").write_bytes(b"from an earlier getter\n")

    def url(path: Any) -> Any:
        if isinstance(path, list):
            return [url(p) for p in path]
        return path if path.startswith("http") else fresh.downloads.url(path)

    config = {**config, "path": url(config["path"])}
    mine, theirs = fresh.run("cloud_file", config)
    if differ is not None:
        assert isinstance(mine, Raised) and not isinstance(theirs, Raised), (mine, theirs)
    same("cloud_file", mine, theirs, config, differ)


# --- rule ---------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


@EXAMPLES
@given(rules=JSON_VALUES, has_rules=st.booleans())
def test_rule(rules: Any, has_rules: bool) -> None:
    config = {"type": "rule", "rules": rules} if has_rules else {"type": "rule"}
    mine = call_cleanroom(our_getters.get_rule, None, config)
    theirs = call_osworld(osworld().getters["rule"], None, config)
    same("rule", mine, theirs, config)
    if has_rules:
        assert mine is rules and theirs is rules


# The getters compared in the other test_getters_* modules, and where.
COMPARED_ELSEWHERE = {
    "rule_relativeTime": "test_getters_relative_time",
    **dict.fromkeys(
        [
            "vlc_config",
            "gimp_config_file",
            "default_video_player",
            "list_directory",
            "shortcuts_on_desktop",
            "vm_wallpaper",
            "audio_in_slide",
            "background_image_in_slide",
        ],
        "test_getters_desktop",
    ),
    **dict.fromkeys(
        [
            "default_search_engine",
            "profile_name",
            "chrome_font_size",
            "enable_do_not_track",
            "enable_safe_browsing",
            "new_startup_page",
            "find_unpacked_extension_path",
            "find_installed_extension_name",
            "data_delete_automacally",
            "bookmarks",
            "history",
            "cookie_data",
        ],
        "test_getters_profiles",
    ),
    **dict.fromkeys(
        ["active_tab_url_parse", "url_dashPart", "url_path_parse"], "test_getters_chrome_tabs"
    ),
    **dict.fromkeys(["vlc_playing_info", "accessibility_tree"], "test_getters_desktop_readers"),
    # OSWorld's drive Playwright, which is not here: checked against a real Chrome instead.
    **dict.fromkeys(
        [
            "open_tabs_info",
            "active_tab_info",
            "page_info",
            "active_url_from_accessTree",
            "active_tab_html_parse",
            "pdf_from_url",
        ],
        "tests/integration/environments/test_osworld_chrome_tabs",
    ),
}


def test_every_getter_is_compared() -> None:
    compared = {
        "vm_command_line",
        "vm_command_error",
        "vm_file",
        "cache_file",
        "cloud_file",
        "rule",
    }
    assert set(our_getters.GETTERS) == compared | set(COMPARED_ELSEWHERE)


def test_every_getter_is_one_of_osworlds() -> None:
    assert set(our_getters.GETTERS) <= set(osworld().getters)


def test_a_getter_not_implemented_is_not_registered() -> None:
    assert not set(our_getters.NOT_IMPLEMENTED) & set(our_getters.GETTERS)
