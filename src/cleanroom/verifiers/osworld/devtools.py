"""The guest's Chrome as OSWorld's Chrome steps and getters see it: the host side of
`guest_chrome`, and the pure rules that turn what it reports into OSWorld's values.

OSWorld reaches Chrome with Playwright's ``connect_over_cdp`` on the guest's port 9222,
which each Chrome task forwards to Chrome's own ``--remote-debugging-port=1337`` with
``socat``. Here the helper `guest_chrome` runs in the guest (as its user, in its sandbox)
and talks to ``127.0.0.1:9222`` the same way, so a task that never forwards the port
finds no Chrome, as in OSWorld.

OSWorld reads the active tab's address from the accessibility tree: the text of Chrome's
address bar, with a ``goto_prefix`` (``https://`` unless the task says otherwise) put in
front. `omnibox_text` gives that text from the address of the tab on show (the one whose
document is visible), as Chrome shows it when the bar is not being edited: without an
``http://`` or ``https://`` scheme, a leading ``www.`` or the slash after a bare host,
and empty for the New Tab page. What an agent typed into the bar without pressing Enter
is not seen here, where OSWorld would read it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cleanroom.guests.base import Guest
from cleanroom.verifiers.osworld import guest_program

HELPER = Path(__file__).with_name("guest_chrome.py")
PORT = 9222  # OSWorld's chromium_port: the socat forward of Chrome's 1337
CONNECT_S = 70.0  # OSWorld's open_tabs step tries 15 times, 5 s apart
LOAD_S = 60.0  # OSWorld's page.goto and wait_for_load_state limits
PAGE_CAP_CHARS = 4 << 20  # a page's HTML, cut in the page
LISTING_CAP_BYTES = 1 << 20  # the tab list, and any one DevTools message but the HTML
PDF_CAP_BYTES = 16 << 20  # a page printed to PDF
PDF_PRINT_S = 60.0 + 3.0  # printing, after OSWorld's 3 s wait (the helper's PDF_PRINT_S)
TAB_PAST_S = 10.0  # one tab's calls beyond its load wait (the helper's _BUDGET_PAST_S)
RELAUNCH = ["google-chrome", "--remote-debugging-port=1337"]  # what OSWorld's getters start
RELAUNCH_WAIT_S = 5.0
_GRACE_S = 30.0  # beyond the helper's own waits, for its start and its answer
_NEW_TAB = ("chrome://newtab", "chrome://new-tab-page", "about:blank")


class DevToolsFailed(Exception):
    """The helper could not be run or did not answer; the infrastructure's fault."""


def run_helper(guest: Guest, op: str, args: dict[str, Any], limit: float) -> dict[str, Any]:
    """Run one operation of `guest_chrome` in ``guest`` and return its answer, within
    ``limit`` seconds (`guest_program.run_json`)."""
    return guest_program.run_json(
        guest,
        HELPER.read_text(),
        [op, json.dumps({"port": PORT, **args})],
        limit=limit,
        what=f"the Chrome helper ({op})",
        fails_as=DevToolsFailed,
    )


def helper_limit(*waits: float) -> float:
    """The wall-clock limit of a helper run whose own waits add up to ``waits``."""
    return sum(waits) + _GRACE_S


def omnibox_text(url: str) -> str:
    """The address bar's text for a tab at ``url``, as Chrome shows it unedited."""
    if not url or url.startswith(_NEW_TAB):
        return ""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    if host.startswith("www."):
        host = host[len("www.") :]
    rest = url[url.index(parts.netloc) + len(parts.netloc) :] if parts.netloc else parts.path
    if rest == "/":
        rest = ""
    return host + rest


def active_tab(tabs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The tab on show: the first whose document is visible (the endpoint lists the most
    recently shown first); None when no tab is on show."""
    return next((t for t in tabs if t.get("visible") is True), None)


def active_url(tabs: list[dict[str, Any]], goto_prefix: str) -> str | None:
    """OSWorld's ``active_url_from_accessTree``: ``goto_prefix`` and the address bar's
    text of the tab on show; None when there is none or the bar is empty."""
    tab = active_tab(tabs)
    if tab is None:
        return None
    text = omnibox_text(str(tab.get("url") or ""))
    return f"{goto_prefix}{text}" if text else None


_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+\-.]*://")
# Second-level labels under a country code that form one public suffix (co.uk, com.sg).
_SECOND_LEVEL = frozenset({"co", "com", "org", "net", "gov", "ac", "edu", "ne", "or"})


def _site_name(netloc: str) -> str:
    """The host without its public suffix and without a lone ``www`` subdomain."""
    host = netloc.rsplit("@", 1)[-1].split(":", 1)[0].strip(".")
    labels = host.split(".") if host else []
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL:
        labels = labels[:-2]
    elif len(labels) >= 2 and not labels[-1].isdigit():
        labels = labels[:-1]
    if len(labels) >= 2 and labels[0] == "www":
        labels = labels[1:]
    return ".".join(labels)


def same_url(first: str | None, second: str | None) -> bool:
    """OSWorld's ``compare_urls`` (``full``): equal once a missing scheme is taken as
    ``http``, the host loses its public suffix and a lone ``www``, and a bare ``/`` path
    is dropped; the query and fragment count. The public suffix is the last label, or the
    last two under a country code (``co.uk``), where OSWorld asks the public suffix list."""
    if first is None or second is None:
        return first == second

    def normal(url: str) -> tuple[str, ...]:
        parts = urlsplit(url if _SCHEME.match(url) else f"http://{url}")
        path = parts.path if parts.path != "/" else ""
        return (parts.scheme.lower(), _site_name(parts.netloc.lower()), path, parts.query)

    def fragment(url: str) -> str:
        return urlsplit(url if _SCHEME.match(url) else f"http://{url}").fragment

    return normal(first) == normal(second) and fragment(first) == fragment(second)
