"""Where the agent's links lead in the verifier's container (`links.resolve`)."""

from __future__ import annotations

import pytest

from cleanroom.verifiers.container.agent_state.links import (
    NOWHERE,
    Entry,
    EntryKind,
    into_places,
    judge,
    resolve,
    resolve_all,
)

FOLDER = Entry(EntryKind.FOLDER)
PLACES = ("/tests", "/logs/verifier", "/run/cleanroom/python")


def tree(**links: str) -> dict[str, Entry]:
    """Folders /app, /logs, /logs/artifacts, /usr/bin and the given links (``a__b``: /a/b)."""
    found = {p: FOLDER for p in ("/app", "/logs", "/logs/artifacts", "/usr", "/usr/bin")}
    found["/usr/bin/python3.11"] = Entry(EntryKind.OTHER)
    for name, target in links.items():
        found["/" + name.replace("__", "/")] = Entry(EntryKind.LINK, target)
    return found


def lstat_of(fs: dict[str, Entry]):  # type: ignore[no-untyped-def]
    return lambda p: fs.get(p, Entry(EntryKind.MISSING))


@pytest.mark.parametrize(
    ("links", "link"),
    [
        ({"app__key": "/tests/expected.txt"}, "/app/key"),  # absolute, dangling before
        ({"app__key": "../tests"}, "/app/key"),  # relative, to a folder
        ({"app__r": "../logs/verifier/reward.txt"}, "/app/r"),
        # a chain that reads as staying inside the artifacts
        (
            {"logs__artifacts__up": "..", "logs__artifacts__a": "up/../tests/expected.txt"},
            "/logs/artifacts/a",
        ),
        ({"app__a": "/app/b", "app__b": "/app/c", "app__c": "/tests"}, "/app/a"),
        ({"app__fd": "/proc/self/root/tests/expected.txt"}, "/app/fd"),
        ({"app__root": "/"}, "/app/root"),  # above every place
        ({"app__logs": "../logs"}, "/app/logs"),  # above the reward folder
        ({"app__g": "/run/cleanroom/python/sitecustomize.py"}, "/app/g"),
    ],
)
def test_a_link_into_the_verifiers_places_is_found(links: dict[str, str], link: str) -> None:
    fs = tree(**links)
    found = into_places([link], lstat_of(fs), PLACES)
    assert [r.link for r in found] == [link]


@pytest.mark.parametrize(
    "links",
    [
        {"app__venv__python": "/usr/bin/python3.11"},
        {"app__lib64": "lib"},
        {"app__latest": "./releases/3"},
        {"app__null": "/dev/null"},
        {"app__loop": "/app/loop"},  # opens nothing at all
        {"app__up": ".."},  # "/" is above every place, but this one ends at /app/..
    ],
)
def test_an_ordinary_link_is_legal(links: dict[str, str]) -> None:
    fs = tree(**links)
    fs.setdefault("/app/venv", FOLDER)
    names = ["/" + n.replace("__", "/") for n in links]
    found = into_places(names, lstat_of(fs), PLACES)
    if "app__up" in links:
        assert [r.resolved for r in found] == ["/"]  # a folder above the places
    else:
        assert found == []


def test_the_resolution_names_where_it_came_to_rest() -> None:
    fs = tree(app__key="../tests")
    resolution = resolve("/app/key/expected.txt", lstat_of(fs), PLACES)
    assert resolution.resolved == "/tests/expected.txt"
    assert resolution.place == "/tests"
    assert "the verifier's /tests" in str(resolution)


def test_a_path_below_a_file_is_read_as_written() -> None:
    fs = tree(app__f="/usr/bin/python3.11/../../../tests")
    assert resolve("/app/f", lstat_of(fs), PLACES).place == "/tests"


def test_each_path_is_asked_once() -> None:
    fs = tree(app__a="/usr/bin/python3.11", app__b="/usr/bin/python3.11")
    asked: list[str] = []

    def lstat(p: str) -> Entry:
        asked.append(p)
        return fs.get(p, Entry(EntryKind.MISSING))

    into_places(["/app/a", "/app/b"], lstat, PLACES)
    assert len(asked) == len(set(asked))


def test_a_link_into_the_verifiers_places_makes_the_tamper_report_tampered() -> None:
    from cleanroom.verifiers.container.decision.tamper import TamperReport

    report = TamperReport((), (), links=("/app/key resolves to /tests (the verifier's /tests)",))

    assert report.tampered
    assert report.paths == ["link /app/key resolves to /tests (the verifier's /tests)"]


# What becomes of each link (`judge`) ---------------------------------------------------

STATE = ("/app",)


def lstat_many_of(fs: dict[str, Entry], calls: list[list[str]] | None = None):  # type: ignore[no-untyped-def]
    def lstat_many(paths: list[str]) -> dict[str, Entry]:
        if calls is not None:
            calls.append(paths)
        return {p: fs[p] for p in paths if p in fs}

    return lstat_many


def fates(fs: dict[str, Entry]) -> dict[str, str]:
    """Each link of the state's fate: tamper, dangling, outside, or kept."""
    found = [p for p, e in fs.items() if e.kind is EntryKind.LINK and p.startswith("/app/")]
    judged = judge(found, lstat_many_of(fs), PLACES, STATE)
    out = {p: "kept" for p in found}
    for what in ("tamper", "dangling", "outside"):
        out.update({r.link: what for r in getattr(judged, what)})
    return out


def test_a_link_that_dangles_is_frozen_to_nowhere_wherever_it_points() -> None:
    fs = tree(app__out="/tmp/tally.expected", app__rel="missing/x", app__lock="root@host.12")
    fs["/tmp"] = FOLDER
    assert fates(fs) == {"/app/out": "dangling", "/app/rel": "dangling", "/app/lock": "dangling"}


def test_a_link_resting_on_the_images_file_or_folder_is_frozen_to_a_copy() -> None:
    fs = tree(app__py="/usr/bin/python3.11", app__scratch="/tmp", app__bin="/usr/bin")
    fs["/tmp"] = FOLDER
    assert set(fates(fs).values()) == {"outside"}


def test_a_link_resting_inside_the_state_is_kept() -> None:
    fs = tree(app__lib64="lib", app__cur="./releases/3", app__abs="/app/lib")
    fs.update({"/app/lib": FOLDER, "/app/releases": FOLDER, "/app/releases/3": FOLDER})
    assert set(fates(fs).values()) == {"kept"}


def test_only_the_last_link_of_the_state_in_a_chain_is_frozen() -> None:
    # python3 -> python -> the image's interpreter: freezing python serves both.
    fs = tree(app__python3="python", app__python="/usr/bin/python3", usr__bin__python3="python3.11")
    assert fates(fs) == {"/app/python3": "kept", "/app/python": "outside"}
    judged = judge(["/app/python"], lstat_many_of(fs), PLACES, STATE)
    assert [r.resolved for r in judged.outside] == ["/usr/bin/python3.11"]


def test_a_dangling_answer_through_a_folder_link_freezes_the_folder_link() -> None:
    # tally.txt -> scratch/tally.expected, scratch -> /tmp: scratch becomes a copy of
    # /tmp as it is now, and tally.txt then dangles inside the state.
    fs = tree(app__scratch="/tmp", app__tally="scratch/tally.expected")
    fs["/tmp"] = FOLDER
    assert fates(fs) == {"/app/scratch": "outside", "/app/tally": "kept"}


def test_links_to_devices_stay_and_a_dangling_one_under_dev_does_not() -> None:
    fs = tree(app__null="/dev/null", app__shm="/dev/shm/expected")
    fs.update({"/dev": FOLDER, "/dev/null": Entry(EntryKind.OTHER), "/dev/shm": FOLDER})
    assert fates(fs) == {"/app/null": "kept", "/app/shm": "dangling"}


def test_a_fifo_of_the_image_outside_dev_cannot_be_frozen_and_is_judged_outside() -> None:
    fs = tree(app__f="/run/fifo")
    fs.update({"/run": FOLDER, "/run/fifo": Entry(EntryKind.OTHER)})
    assert fates(fs) == {"/app/f": "outside"}


def test_a_loop_dangles() -> None:
    assert fates(tree(app__a="b", app__b="a")) == {"/app/a": "dangling", "/app/b": "dangling"}


def test_links_into_the_verifiers_places_are_tamper_before_anything_is_frozen() -> None:
    fs = tree(app__key="/tests/expected.txt", app__out="/tmp/x")
    assert fates(fs)["/app/key"] == "tamper"


def test_a_path_through_a_file_dangles_even_when_it_climbs_back() -> None:
    fs = tree(app__x="/usr/bin/python3.11/../python3.11")
    assert fates(fs) == {"/app/x": "dangling"}


def test_many_links_are_resolved_in_a_few_rounds() -> None:
    # 2,000 links to distinct paths of the image, each two folders deep: every round asks
    # for all the paths it needs at once.
    fs = tree()
    fs["/data"] = FOLDER
    for i in range(2000):
        fs[f"/data/d{i}"] = FOLDER
        fs[f"/data/d{i}/f"] = Entry(EntryKind.FILE)
        fs[f"/app/l{i}"] = Entry(EntryKind.LINK, f"/data/d{i}/f")
    calls: list[list[str]] = []
    links = [f"/app/l{i}" for i in range(2000)]
    resolved = resolve_all(links, lstat_many_of(fs, calls), PLACES)
    assert all(r.kind is EntryKind.FILE for r in resolved.values())
    assert len(calls) <= 5


def test_a_link_below_a_folder_the_verifier_lacks_is_never_kept_unjudged() -> None:
    # What answers for the folders above the state says /app is missing: the link is
    # never reached, so nothing shows where it leads, and it is frozen to nowhere.
    fs = tree(app__result="/tests/expected.txt")
    del fs["/app"]
    judged = judge(["/app/result"], lstat_many_of(fs), PLACES, STATE)
    assert [(r.link, r.resolved) for r in judged.dangling] == [("/app/result", NOWHERE)]
