"""The getters that read the running desktop against OSWorld's: ``vlc_playing_info``
against a stand-in for VLC's web interface that both sides ask, and
``accessibility_tree``, whose tree must reach OSWorld's metric unchanged whether it came
through OSWorld's ``/accessibility`` or from the environment's reader.

A difference is allowed only where a name from DELIBERATE applies, and the test says
which.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("desktop_env")

from hypothesis import given, settings
from hypothesis import strategies as st

from cleanroom.verifiers.osworld.getters import vlc_status
from cleanroom.verifiers.osworld.getters.accessibility import tree_from_answer

from .differences import DELIBERATE
from .fake_vm import Sides, VlcWeb
from .reference import EXAMPLES, Raised, call_cleanroom, call_osworld, osworld, same_score

VLC_SILENT = "vlc_playing_info: nothing answers on VLC's web interface"
CONFIG = {"type": "vlc_playing_info", "dest": "status.xml"}

STATES = st.sampled_from(["playing", "paused", "stopped"])
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=12)


def status_xml(state: str, name: str) -> bytes:
    name = name.replace("&", "&amp;").replace("<", "&lt;")
    return (
        "<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n<root>"
        f"<state>{state}</state><information><category name='meta'>"
        f"<info name='filename'>{name}</info></category></information></root>"
    ).encode()


@pytest.fixture(scope="module")
def vlc() -> Iterator[VlcWeb]:
    web = VlcWeb()
    yield web
    web.close()


@pytest.fixture
def on_port(monkeypatch: pytest.MonkeyPatch) -> Any:
    def point(port: int) -> None:
        monkeypatch.setattr(vlc_status, "PORT", port)

    return point


# Each example starts the helper in a fresh Python: fewer of them.
@settings(EXAMPLES, max_examples=min(EXAMPLES.max_examples, 40))
@given(
    body=st.one_of(st.builds(status_xml, STATES, TEXT), st.binary(max_size=64)),
    dest=st.sampled_from(["status.xml", "sub/status.xml"]),
)
def test_vlc_playing_info(sides: Sides, vlc: VlcWeb, on_port: Any, body: bytes, dest: str) -> None:
    sides.reset()
    vlc.status = body
    on_port(vlc.port)
    mine, theirs = sides.run("vlc_playing_info", {**CONFIG, "dest": dest}, vlc_port=vlc.port)
    if dest == "sub/status.xml":  # a dest folder the cache does not have
        assert mine == Raised("GetterFailed") and theirs == Raised("FileNotFoundError")
        return
    assert mine == theirs == ("file", "status.xml", body)


def test_vlc_playing_info_is_none_when_the_password_is_refused(fresh: Sides, on_port: Any) -> None:
    other = VlcWeb(password="not the one")
    try:
        on_port(other.port)
        assert fresh.run("vlc_playing_info", CONFIG, vlc_port=other.port) == (None, None)
    finally:
        other.close()


def test_vlc_playing_info_when_nothing_answers(fresh: Sides, on_port: Any) -> None:
    web = VlcWeb()
    port = web.port
    web.close()
    on_port(port)
    mine, theirs = fresh.run("vlc_playing_info", CONFIG, vlc_port=port)
    assert VLC_SILENT in DELIBERATE  # shown in test_differences
    assert (mine, theirs) == (Raised("VlcNotAnswering"), Raised("ConnectionError"))


ROLES = st.sampled_from(["application", "frame", "push-button", "label", "paragraph"])


def element(role: str, name: str, text: str) -> str:
    def escaped(value: str, quote: bool) -> str:
        value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return value.replace('"', "&quot;") if quote else value

    return f'<{role} name="{escaped(name, True)}" st:showing="true">{escaped(text, False)}</{role}>'


@EXAMPLES
@given(nodes=st.lists(st.tuples(ROLES, TEXT, TEXT), max_size=5), wanted=TEXT)
def test_accessibility_tree_reaches_the_metric_unchanged(
    sides: Sides, nodes: list[tuple[str, str, str]], wanted: str
) -> None:
    ns = 'xmlns:st="https://accessibility.ubuntu.example.org/ns/state"'
    tree = f"<desktop-frame {ns}>" + "".join(element(*n) for n in nodes) + "</desktop-frame>"
    sides.vm.tree = tree
    theirs = call_osworld(osworld().getters["accessibility_tree"], sides.env(), {})
    reader_line = json.dumps({"ok": True, "xml": tree}, ensure_ascii=False) + "\n"
    mine = call_cleanroom(tree_from_answer, reader_line.encode("utf-8"))
    assert mine == theirs == tree
    rules = [{"selectors": ["label"], "text": wanted, "exact": False}]
    metric = osworld().metrics["check_accessibility_tree"]
    assert same_score(call_osworld(metric, mine, rules), call_osworld(metric, theirs, rules))
