"""The getters that read the running desktop: ``vlc_playing_info`` (VLC's web interface,
asked by a helper in the guest) and ``accessibility_tree`` (the environment's reader run
once in the guest): how their answers are read, and their bounds, with local servers."""

from __future__ import annotations

import base64
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cleanroom.guests.local import LocalGuest
from cleanroom.verifiers.osworld import guest_vlc
from cleanroom.verifiers.osworld.getters import (
    GETTERS,
    NOT_IMPLEMENTED,
    GetterContext,
    GetterFailed,
    accessibility,
    vlc_status,
)
from cleanroom.verifiers.osworld.getters.accessibility import tree_from_answer
from cleanroom.verifiers.osworld.getters.vlc_status import (
    VlcNotAnswering,
    VlcStatus,
    parse_answer,
)
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.support import missing_for_check
from cleanroom.verifiers.osworld.task import parse_task
from cleanroom.verifiers.osworld.task_cache import TaskCache

STATUS = b"<?xml version='1.0'?><root><state>playing</state></root>"


def helper_answer(**answer: Any) -> bytes:
    return json.dumps(answer).encode() + b"\n"


# --- vlc_playing_info: the helper's answer ----------------------------------------------


def test_an_answer_gives_vlcs_status_and_body() -> None:
    out = helper_answer(
        answered=True, status=200, body=base64.b64encode(STATUS).decode(), over=False
    )
    assert parse_answer(out) == VlcStatus(200, STATUS)


def test_nothing_answering_is_a_missing_result_that_scores_0() -> None:
    with pytest.raises(VlcNotAnswering, match="did not answer: ConnectionRefusedError") as info:
        parse_answer(helper_answer(answered=False, why="ConnectionRefusedError: refused"))
    assert isinstance(info.value, FileNotFoundError)


def test_a_status_over_the_cap_scores_0() -> None:
    with pytest.raises(VlcNotAnswering, match="over"):
        parse_answer(helper_answer(answered=True, status=200, body="", over=True))


def test_a_helper_printing_no_json_is_a_getter_failure() -> None:
    with pytest.raises(GetterFailed, match="JSON"):
        parse_answer(b"Traceback ...")


def test_a_body_that_is_not_base64_is_a_getter_failure() -> None:
    with pytest.raises(GetterFailed, match="base64"):
        parse_answer(helper_answer(answered=True, status=200, body="%%%", over=False))


# --- vlc_playing_info: the helper against local servers ---------------------------------


class Vlc:
    """A local stand-in for VLC's web interface: what it answers is set per test."""

    def __init__(self) -> None:
        self.status = 200
        self.body = STATUS
        self.stall_s = 0.0
        self.auth: list[str | None] = []
        vlc = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                vlc.auth.append(self.headers.get("Authorization"))
                self.send_response(vlc.status)
                self.send_header("Content-Length", str(len(vlc.body)))
                self.end_headers()
                self.wfile.write(vlc.body[:10])
                self.wfile.flush()
                time.sleep(vlc.stall_s)
                self.wfile.write(vlc.body[10:])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def vlc() -> Iterator[Vlc]:
    server = Vlc()
    yield server
    server.close()


def ask(port: int, **bounds: Any) -> dict[str, Any]:
    args = {"password": "password", "connect_s": 2, "total_s": 5, "max_bytes": 1000}
    return guest_vlc.status({**args, **bounds, "port": port})


def test_the_helper_asks_with_an_empty_user_and_the_password(vlc: Vlc) -> None:
    answer = ask(vlc.port)
    assert answer["status"] == 200 and base64.b64decode(answer["body"]) == STATUS
    assert vlc.auth == ["Basic " + base64.b64encode(b":password").decode()]


def test_the_helper_cuts_a_long_status_and_says_so(vlc: Vlc) -> None:
    vlc.body = b"x" * 5000
    answer = ask(vlc.port, max_bytes=1000)
    assert answer["over"] is True and len(base64.b64decode(answer["body"])) == 1000


def test_the_helper_stops_waiting_for_a_status_at_its_limit(vlc: Vlc) -> None:
    vlc.stall_s = 5.0
    started = time.monotonic()
    answer = ask(vlc.port, total_s=1)
    assert answer["answered"] is False and time.monotonic() - started < 3


def test_the_helper_says_when_nothing_listens(vlc: Vlc) -> None:
    port = vlc.port
    vlc.close()
    assert ask(port)["answered"] is False


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[GetterContext]:
    guest = LocalGuest(home=str(tmp_path / "home"))
    cache = TaskCache(str(tmp_path / "cache"), "task")
    cache.reset()
    yield GetterContext(guest, CheckSettings(getter_timeout=10), cache)
    guest.close()


def test_vlc_playing_info_saves_the_status_as_dest(
    vlc: Vlc, ctx: GetterContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vlc_status, "PORT", vlc.port)
    saved = GETTERS["vlc_playing_info"](ctx, {"dest": "status.xml"})
    assert saved.data == STATUS and saved.path.endswith("status.xml")


def test_vlc_playing_info_gives_none_for_a_refused_password(
    vlc: Vlc, ctx: GetterContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vlc_status, "PORT", vlc.port)
    vlc.status = 401
    assert GETTERS["vlc_playing_info"](ctx, {"dest": "status.xml"}) is None


# --- accessibility_tree -----------------------------------------------------------------

TREE = '<desktop-frame xmlns:st="x"><application name="a"/></desktop-frame>'


def test_the_readers_tree_is_the_value() -> None:
    assert tree_from_answer(helper_answer(ok=True, xml=TREE)) == TREE


def test_a_reader_error_is_a_getter_failure_naming_it() -> None:
    with pytest.raises(GetterFailed, match="bus gone"):
        tree_from_answer(helper_answer(ok=False, error="bus gone"))


def test_a_tree_the_reader_would_not_write_is_a_getter_failure() -> None:
    with pytest.raises(GetterFailed, match="well-formed"):
        tree_from_answer(
            helper_answer(ok=True, xml='<desktop-frame><!ENTITY x "y"></desktop-frame>')
        )


def test_a_tree_cut_by_the_time_bound_is_a_getter_failure() -> None:
    with pytest.raises(GetterFailed, match="out of time"):
        tree_from_answer(helper_answer(ok=True, xml=TREE, truncated=True, cut=["time"]))


def test_a_tree_cut_by_the_node_bound_is_the_value() -> None:
    assert tree_from_answer(helper_answer(ok=True, xml=TREE, truncated=True, cut=["nodes"])) == TREE


def test_an_answer_over_the_cap_is_a_getter_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accessibility.atspi, "MAX_ANSWER_BYTES", 100)
    with pytest.raises(GetterFailed, match="over 100 bytes"):
        tree_from_answer(helper_answer(ok=True, xml=TREE + " " * 100))


def test_the_one_request_wrapper_runs_a_reader_source_as_a_script() -> None:
    source = (
        "from __future__ import annotations\n"
        "import json, sys\n"
        "if __name__ == '__main__':\n"
        "    print(json.dumps({'got': sys.stdin.readline(), 'args': sys.argv[1:]}))\n"
    )
    argv = ["/usr/bin/python3", "-I", "-c", accessibility._ONE_TREE, source]
    out = subprocess.run(argv, capture_output=True, check=True, timeout=30).stdout
    assert json.loads(out) == {"got": '{"op": "tree"}\n', "args": []}


def test_accessibility_tree_needs_a_desktop_session(ctx: GetterContext) -> None:
    with pytest.raises(GetterFailed, match="desktop session"):
        GETTERS["accessibility_tree"](ctx, {})


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "getter",
    [
        "vm_terminal_output",
        "chrome_appearance_mode_ui",
        "info_from_website",
        "gotoRecreationPage_and_get_html_content",
        "googledrive_file",
        "vscode_config",
    ],
)
def test_a_getter_that_cannot_exist_here_is_refused_with_its_reason(getter: str) -> None:
    task = parse_task(
        {
            "id": "t",
            "instruction": "x",
            "config": [],
            "evaluator": {
                "func": "check_include_exclude",
                "result": {"type": getter},
                "expected": {"type": "rule", "rules": {"include": []}},
            },
        }
    )
    assert getter not in GETTERS
    assert missing_for_check(task) == [f"getter {getter} ({NOT_IMPLEMENTED[getter]})"]
