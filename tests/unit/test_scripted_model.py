"""examples/offline/scripted_model.py, the model endpoint the docs' offline recipes use:
an OpenAI-compatible chat server whose model calls ``bash`` once with its script, then
says it is done, streamed or not."""

from __future__ import annotations

import importlib.util
import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = "bash /solution/solve.sh"
SOURCE = Path(__file__).resolve().parents[2] / "examples" / "offline" / "scripted_model.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scripted_model", SOURCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def base_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _module().handler(SCRIPT))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _post(base_url: str, body: dict[str, Any]) -> bytes:
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer any"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        data: bytes = response.read()
    return data


def test_the_first_turn_calls_bash_with_the_script(base_url: str) -> None:
    body = {"model": "any", "messages": [{"role": "user", "content": "fix it"}]}
    answer = json.loads(_post(base_url, body))
    (choice,) = answer["choices"]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "bash"
    assert json.loads(call["function"]["arguments"]) == {"command": SCRIPT}


def test_once_a_tool_answered_the_model_says_it_is_done(base_url: str) -> None:
    messages = [{"role": "user", "content": "fix it"}, {"role": "tool", "content": "ok"}]
    answer = json.loads(_post(base_url, {"model": "any", "messages": messages}))
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": "Done."}


def test_a_streamed_turn_sends_the_call_as_chunks_then_done(base_url: str) -> None:
    body = {"model": "any", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    events = [
        line.removeprefix(b"data: ").decode()
        for line in _post(base_url, body).splitlines()
        if line.startswith(b"data: ")
    ]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    (call,) = chunks[0]["choices"][0]["delta"]["tool_calls"]
    assert call["index"] == 0 and call["function"]["name"] == "bash"
    assert chunks[1]["choices"][0]["finish_reason"] == "tool_calls"
