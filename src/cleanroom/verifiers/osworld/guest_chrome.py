"""The guest's Chrome over its DevTools port, for the Chrome setup steps and getters: run
by the system Python in the guest, never imported by the package.

It runs as the guest's user, in its sandbox (the step runner and the getters start it
through the guest), speaks only to ``127.0.0.1:<port>`` and uses the standard library
alone: the HTTP ``/json`` endpoints and a small WebSocket client for the DevTools
protocol. It takes one operation and its arguments as a JSON object in argv:

    tabs   {"port", "connect_s", "load_s", "total_s", "max_bytes"} -> {"tabs": [...]}
    open   {"port", "connect_s", "load_s", "urls": [U, ...]}        -> {"opened": [...], ...}
    close  {"port", "connect_s", "ids": [I, ...]}                   -> {"closed": [...]}
    visit  {"port", "connect_s", "load_s", "max_bytes", "url": U, "pdf"?: b}
                                                                   -> {"page": {...}}
    query  {"port", "connect_s", "load_s", "total_s", "max_bytes", "url": U,
            "queries": [{"kind", "selector"}, ...]}                -> {"found", "answers", ...}

Each tab is ``{"id", "url", "title", "visible", "loaded", "content"?}``. It prints one
JSON object; ``{"connected": false, "why": ...}`` when nothing answers on the port within
``connect_s``. A failure of its own is a traceback and a non-zero exit.

Everything the page controls is bounded: each HTTP answer and each DevTools message to
``max_bytes``, every socket read by the time left, a page's HTML to ``max_bytes``
characters (cut, and marked so).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct
import sys
import time
from typing import Any
from urllib.parse import unquote

HOST = "127.0.0.1"
POLL_S = 0.25
SETTLE_S = 0.5  # quiet time after the load event, standing in for "network idle"
_HEADER_CAP = 64 * 1024
# What a page is asked for: its address, title, load state and whether it is on show.
_STATE_JS = (
    "JSON.stringify({url: location.href, title: document.title,"
    " state: document.readyState, visible: document.visibilityState})"
)
# The page's HTML as Playwright's ``page.content()`` gives it: the doctype, then the root;
# cut in the page to the cap, so no longer string ever crosses the connection.
_CONTENT_JS = (
    "(() => { let s = ''; if (document.doctype) s = new XMLSerializer()"
    ".serializeToString(document.doctype); if (document.documentElement)"
    " s += document.documentElement.outerHTML; return {html: s.slice(0, %d), length: s.length};"
    " })()"
)
# Playwright's ``page.pdf()`` defaults: Letter, no margins, no backgrounds, scale 1.
PDF_OPTIONS = {
    "paperWidth": 8.5,
    "paperHeight": 11,
    "marginTop": 0,
    "marginBottom": 0,
    "marginLeft": 0,
    "marginRight": 0,
    "printBackground": False,
    "preferCSSPageSize": False,
    "scale": 1,
}
PDF_SETTLE_S = 3.0  # OSWorld's wait before printing, "to ensure all content is rendered"
PDF_PRINT_S = 60.0
_ESCAPED = 6  # a character's longest JSON form (\uXXXX), for the message cap around HTML
_BUDGET_PAST_S = 10.0  # one tab's calls beyond its load wait

# The questions ``active_tab_html_parse`` asks the page, as Playwright's calls answer them
# (``query_selector_all`` and ``text_content``, the direct text nodes, an ``h3`` or a
# ``span`` inside, the first XPath match's text or input value); a question that throws
# answers {"error"}.
_QUERY_JS = """(queries) => queries.map((q) => { try {
  const all = (css) => Array.from(document.querySelectorAll(css));
  const xpath = (xp) => document.evaluate(
    xp, document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
  if (q.kind === "texts") return all(q.selector).map((e) => e.textContent);
  if (q.kind === "direct_texts") {
    const found = all(q.selector);
    if (!found.length) return [];
    return Array.from(found[0].childNodes).filter((n) => n.nodeType === Node.TEXT_NODE)
      .map((n) => n.textContent.trim()).filter(Boolean);
  }
  if (q.kind === "h3_texts") return all(q.selector).map((e) => e.querySelector("h3"))
    .filter(Boolean).map((h) => h.textContent);
  if (q.kind === "li_spans") return all(q.selector + " li.catAllProducts")
    .map((e) => e.querySelector("span")).filter(Boolean).map((s) => s.innerText);
  if (q.kind === "xpath_text") {
    const r = xpath(q.selector);
    return {count: r.snapshotLength, text: r.snapshotLength ? r.snapshotItem(0).textContent : null};
  }
  if (q.kind === "xpath_value") {
    const r = xpath(q.selector);
    if (!r.snapshotLength) return {count: 0};
    const e = r.snapshotItem(0);
    if (!["INPUT", "TEXTAREA", "SELECT"].includes(e.nodeName)) return {error: "not an input"};
    return {count: r.snapshotLength, value: e.value};
  }
  return {error: "unknown question " + q.kind};
} catch (err) { return {error: String(err)}; } })"""


class DevToolsError(Exception):
    """The DevTools endpoint answered something unusable or went away."""


class Deadline:
    """A point in time every blocking call of one operation is bounded by."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(self.end - time.monotonic(), 0.0)

    def passed(self) -> bool:
        return self.left() <= 0.0


def _recv_until(sock: socket.socket, marker: bytes, cap: int) -> bytes:
    data = b""
    while marker not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise DevToolsError("the connection closed mid-answer")
        data += chunk
        if len(data) > cap:
            raise DevToolsError(f"an answer's header ran past {cap} bytes")
    return data


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return int(value.strip())
    return None


def http_json(port: int, method: str, path: str, timeout: float, cap: int) -> Any:
    """One HTTP request to the DevTools endpoint; its JSON body (None when empty)."""
    with socket.create_connection((HOST, port), timeout=max(timeout, 0.05)) as sock:
        sock.settimeout(max(timeout, 0.05))
        request = f"{method} {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n\r\n"
        sock.sendall(request.encode("ascii"))
        data = _recv_until(sock, b"\r\n\r\n", _HEADER_CAP)
        head, _, body = data.partition(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0].split()
        if len(status) < 2 or not status[1].isdigit():
            raise DevToolsError(f"not an HTTP answer: {head[:200]!r}")
        length = _content_length(head)
        if length is not None and length > cap:
            raise DevToolsError(f"{path} answers {length} bytes, more than {cap}")
        # Chrome keeps the connection open whatever is asked, so the length ends the body.
        while (length is None or len(body) < length) and len(body) <= cap:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        if len(body) > cap:
            raise DevToolsError(f"{path} answered more than {cap} bytes")
        body = body if length is None else body[:length]
    if int(status[1]) != 200:
        raise DevToolsError(f"{method} {path} answered {status[1].decode()}: {body[:200]!r}")
    text = body.decode("utf-8", "replace").strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text  # /json/close answers "Target is closing"


class WebSocket:
    """A client WebSocket (RFC 6455) to one DevTools target: text frames, masked."""

    def __init__(self, port: int, path: str, deadline: Deadline, cap: int) -> None:
        self.cap = cap
        self.deadline = deadline
        self.sock = socket.create_connection((HOST, port), timeout=max(deadline.left(), 0.05))
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        handshake = (
            f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(handshake.encode("ascii"))
        head, _, self.buffer = _recv_until(self.sock, b"\r\n\r\n", _HEADER_CAP).partition(
            b"\r\n\r\n"
        )
        if b" 101 " not in head.split(b"\r\n", 1)[0] + b" ":
            raise DevToolsError(f"the WebSocket upgrade was refused: {head[:200]!r}")
        self.next_id = 0

    def close(self) -> None:
        self.sock.close()  # closing a socket does not raise

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            left = self.deadline.left()
            if left <= 0:
                raise TimeoutError("the DevTools answer did not come in time")
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise DevToolsError("the DevTools connection closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _send(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def _message(self) -> str:
        parts: list[bytes] = []
        size = 0
        while True:
            first, second = self._read(2)
            opcode, n = first & 0x0F, second & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self._read(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", self._read(8))
            if second & 0x80:
                raise DevToolsError("the endpoint sent a masked frame")
            size += n
            if size > self.cap:
                raise DevToolsError(f"a DevTools message ran past {self.cap} bytes")
            payload = self._read(n)
            if opcode == 0x8:
                raise DevToolsError("the endpoint closed the DevTools connection")
            if opcode == 0x9:
                self._send(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            parts.append(payload)
            if first & 0x80:
                return b"".join(parts).decode("utf-8", "replace")

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one command and return its result; events in between are dropped."""
        self.next_id += 1
        wanted = self.next_id
        self._send(
            0x1, json.dumps({"id": wanted, "method": method, "params": params or {}}).encode()
        )
        while True:
            answer = json.loads(self._message())
            if isinstance(answer, dict) and answer.get("id") == wanted:
                if "error" in answer:
                    raise DevToolsError(f"{method}: {answer['error']}")
                result = answer.get("result")
                return result if isinstance(result, dict) else {}

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page's main frame."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise DevToolsError(f"the page threw: {result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")


def _ws_path(target: dict[str, Any]) -> str:
    url = str(target.get("webSocketDebuggerUrl") or "")
    marker = url.find("/devtools/")
    if marker < 0:
        raise DevToolsError(f"target {target.get('id')!r} offers no DevTools connection")
    return url[marker:]


def wait_for_endpoint(port: int, seconds: float, cap: int) -> dict[str, Any] | None:
    """``/json/version`` once the port answers, polled for ``seconds``; None if it never does."""
    deadline = Deadline(seconds)
    while True:
        try:
            version = http_json(port, "GET", "/json/version", min(deadline.left(), 5.0), cap)
            if isinstance(version, dict):
                return version
        except (OSError, DevToolsError, TimeoutError):
            pass
        if deadline.passed():
            return None
        time.sleep(min(POLL_S, deadline.left()))


def pages(port: int, cap: int) -> list[dict[str, Any]]:
    """The page targets (tabs), in the order the endpoint lists them."""
    listed = http_json(port, "GET", "/json/list", 10.0, cap)
    if not isinstance(listed, list):
        raise DevToolsError(f"/json/list answered {type(listed).__name__}, not a list")
    return [t for t in listed if isinstance(t, dict) and t.get("type") == "page"]


def _page_state(ws: WebSocket) -> dict[str, Any] | None:
    try:
        raw = ws.evaluate(_STATE_JS)
    except DevToolsError:  # the page is between two documents
        return None
    state = json.loads(raw) if isinstance(raw, str) else None
    return state if isinstance(state, dict) else None


def wait_loaded(ws: WebSocket, seconds: float, leave: str | None = None) -> dict[str, Any]:
    """The page's state once its document is complete (and, with ``leave``, no longer
    at that address), polled for ``seconds``; ``loaded`` says whether it got there."""
    deadline = Deadline(seconds)
    state: dict[str, Any] | None = None
    while True:
        state = _page_state(ws) or state
        done = state is not None and state.get("state") == "complete"
        if done and leave is not None and state is not None and state.get("url") == leave:
            done = False
        if done or deadline.passed():
            break
        time.sleep(min(POLL_S, deadline.left()))
    if state is not None and done:
        time.sleep(min(SETTLE_S, deadline.left() + SETTLE_S))
        state = _page_state(ws) or state
    return {**(state or {}), "loaded": bool(done)}


def _tab(
    port: int, target: dict[str, Any], load_s: float, cap: int, content: bool
) -> dict[str, Any]:
    tab: dict[str, Any] = {"id": target.get("id"), "url": target.get("url"), "title": None}
    message_cap = cap * _ESCAPED + 65536 if content else cap
    ws = WebSocket(port, _ws_path(target), Deadline(load_s + _BUDGET_PAST_S), message_cap)
    try:
        state = wait_loaded(ws, load_s)
        tab.update(
            url=state.get("url", tab["url"]),
            title=state.get("title"),
            visible=state.get("visible") == "visible",
            loaded=state["loaded"],
        )
        if content:
            read = ws.evaluate(_CONTENT_JS % cap)
            read = read if isinstance(read, dict) else {}
            html = read.get("html")
            tab["content"] = html if isinstance(html, str) else ""
            tab["content_cut"] = bool(read.get("length", 0) > cap)
    finally:
        ws.close()
    return tab


def _unread(target: dict[str, Any]) -> dict[str, Any]:
    """A tab left unasked once the operation's time is spent: not loaded, as far as known."""
    return {"id": target.get("id"), "url": target.get("url"), "title": None, "loaded": False}


def op_tabs(args: dict[str, Any]) -> dict[str, Any]:
    """Every tab once loaded, each waited for up to ``load_s`` within ``total_s`` in all;
    the tabs left when that is spent are listed as not loaded, without asking them."""
    port, cap = int(args["port"]), int(args["max_bytes"])
    if wait_for_endpoint(port, float(args["connect_s"]), cap) is None:
        return {"connected": False, "why": f"nothing answered on port {port}"}
    total = Deadline(float(args["total_s"]))
    tabs = []
    for target in pages(port, cap):
        if total.passed():
            tabs.append(_unread(target))
            continue
        try:
            tabs.append(_tab(port, target, min(float(args["load_s"]), total.left()), cap, False))
        except (OSError, DevToolsError, TimeoutError) as exc:
            tabs.append({"id": target.get("id"), "url": target.get("url"), "error": str(exc)})
    return {"connected": True, "tabs": tabs}


def _navigate(port: int, target: dict[str, Any], url: str, args: dict[str, Any]) -> dict[str, Any]:
    load_s = float(args["load_s"])
    ws = WebSocket(port, _ws_path(target), Deadline(load_s + 10.0), int(args["max_bytes"]))
    try:
        try:
            answer = ws.call("Page.navigate", {"url": url})
        except DevToolsError as exc:
            return {"url": url, "loaded": False, "error": str(exc)}
        if answer.get("errorText"):  # the load failed: the tab shows Chrome's error page
            return {"url": url, "loaded": False, "error": answer["errorText"]}
        return wait_loaded(ws, load_s, leave=None if url == "about:blank" else "about:blank")
    finally:
        ws.close()


def op_open(args: dict[str, Any]) -> dict[str, Any]:
    port, cap = int(args["port"]), int(args.get("max_bytes", 1 << 20))
    if wait_for_endpoint(port, float(args["connect_s"]), cap) is None:
        return {"connected": False, "why": f"nothing answered on port {port}"}
    before = [t.get("id") for t in pages(port, cap)]
    opened = []
    for i, url in enumerate(args["urls"]):
        target = http_json(port, "PUT", "/json/new?about:blank", 10.0, cap)
        if not isinstance(target, dict):
            raise DevToolsError(f"/json/new answered {target!r}")
        state = _navigate(port, target, str(url), {**args, "max_bytes": cap})
        opened.append({"id": target.get("id"), "asked": url, **state})
        if i == 0:  # the default tab goes once the first page is open
            first = before[0] if before else target.get("id")
            http_json(port, "GET", f"/json/close/{first}", 10.0, cap)
            opened[0]["closed_default"] = first
    return {"connected": True, "opened": opened}


def op_close(args: dict[str, Any]) -> dict[str, Any]:
    port, cap = int(args["port"]), 1 << 20
    if wait_for_endpoint(port, float(args["connect_s"]), cap) is None:
        return {"connected": False, "why": f"nothing answered on port {port}"}
    for target_id in args["ids"]:
        http_json(port, "GET", f"/json/close/{target_id}", 10.0, cap)
    return {"connected": True, "closed": list(args["ids"])}


def op_visit(args: dict[str, Any]) -> dict[str, Any]:
    """Load a page in a fresh browser context (no cookies, as Playwright's
    ``browser.new_page()``), read it, and dispose of the context. A page that cannot be
    loaded or read answers ``{"error"}`` in ``page``."""
    port, cap = int(args["port"]), int(args["max_bytes"])
    version = wait_for_endpoint(port, float(args["connect_s"]), cap)
    if version is None:
        return {"connected": False, "why": f"nothing answered on port {port}"}
    load_s = float(args["load_s"])
    browser = WebSocket(port, _ws_path(version), Deadline(load_s + 3 * _BUDGET_PAST_S), 1 << 20)
    try:
        context = browser.call("Target.createBrowserContext")["browserContextId"]
        try:
            made = browser.call(
                "Target.createTarget", {"url": "about:blank", "browserContextId": context}
            )
            pdf = bool(args.get("pdf"))
            page = _visit(port, made.get("targetId"), str(args["url"]), load_s, cap, not pdf)
            if pdf and page.get("loaded") and "error" not in page:
                page = _print(port, made.get("targetId"), page, cap)
        finally:
            with contextlib.suppress(OSError, DevToolsError, TimeoutError):
                browser.call("Target.disposeBrowserContext", {"browserContextId": context})
    finally:
        browser.close()
    return {"connected": True, "page": page}


def _print(port: int, target_id: Any, page: dict[str, Any], cap: int) -> dict[str, Any]:
    """The loaded page as a PDF (base64, at most ``cap`` bytes), as ``page.pdf()`` makes it."""
    time.sleep(PDF_SETTLE_S)
    try:
        [target] = [t for t in pages(port, cap) if t.get("id") == target_id]
        ws = WebSocket(port, _ws_path(target), Deadline(PDF_PRINT_S), cap * 4 // 3 + 65536)
        try:
            printed = ws.call("Page.printToPDF", PDF_OPTIONS)
        finally:
            ws.close()
    except (OSError, DevToolsError, TimeoutError, ValueError) as exc:
        return {**page, "error": f"printing failed: {exc}"}
    return {**page, "content": "", "pdf": printed.get("data", "")}


def _visit(
    port: int, target_id: Any, url: str, load_s: float, cap: int, content: bool
) -> dict[str, Any]:
    try:
        found = [t for t in pages(port, cap) if t.get("id") == target_id]
        if not found:
            raise DevToolsError(f"the new tab {target_id!r} is not listed")
        state = _navigate(port, found[0], url, {"load_s": load_s, "max_bytes": cap})
        page = {**state, **_tab(port, found[0], 0.0, cap, content=content)}
    except (OSError, DevToolsError, TimeoutError) as exc:
        return {"url": url, "loaded": False, "error": str(exc)}
    page["loaded"] = state.get("loaded", False)
    if "error" in state:
        page["error"] = state["error"]
    return page


def _normal(url: str) -> str:
    """OSWorld's match of a tab to the address bar: percent-decoded, trailing slashes off."""
    return unquote(url).rstrip("/")


def op_query(args: dict[str, Any]) -> dict[str, Any]:
    """Find the tab at ``url`` (each tab waited for first, as OSWorld waits for each,
    within ``total_s`` in all) and answer the questions in it."""
    port, cap = int(args["port"]), int(args["max_bytes"])
    if wait_for_endpoint(port, float(args["connect_s"]), cap) is None:
        return {"connected": False, "why": f"nothing answered on port {port}"}
    wanted = _normal(str(args["url"]))
    total = Deadline(float(args["total_s"]))
    seen = []
    for target in pages(port, cap):
        if total.passed():
            break
        load_s = min(float(args["load_s"]), total.left())
        try:
            ws = WebSocket(port, _ws_path(target), Deadline(load_s + _BUDGET_PAST_S), cap)
        except (OSError, DevToolsError, TimeoutError):
            continue  # OSWorld skips a tab it cannot read
        try:
            state = wait_loaded(ws, load_s)
            url = str(state.get("url", target.get("url")))
            seen.append(url)
            if _normal(url) != wanted:
                continue
            expression = f"({_QUERY_JS})({json.dumps(args['queries'])})"
            answers = ws.evaluate(expression)
            return {"connected": True, "found": True, "url": url, "answers": answers}
        except (OSError, DevToolsError, TimeoutError):
            continue
        finally:
            ws.close()
    return {"connected": True, "found": False, "seen": seen}


OPERATIONS = {
    "tabs": op_tabs,
    "open": op_open,
    "close": op_close,
    "visit": op_visit,
    "query": op_query,
}


def main(argv: list[str]) -> int:
    op, args = argv[0], json.loads(argv[1])
    print(json.dumps(OPERATIONS[op](args)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
