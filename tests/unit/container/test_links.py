"""Where the agent's links lead in the verifier's container (`links.resolve`)."""

from __future__ import annotations

import pytest

from cleanroom.verifiers.container.agent_state.links import Entry, EntryKind, into_places, resolve

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
