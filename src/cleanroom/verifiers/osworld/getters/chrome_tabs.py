"""OSWorld's getters that ask the running Chrome about its tabs, over its DevTools port.

They go through `devtools` (the guest-side helper `guest_chrome`). The active tab's
address stands in for the accessibility tree's address bar, as `devtools` explains.
OSWorld returns a fixed value when Chrome cannot be reached (``[]``, None, a page record
saying so): the agent may have closed Chrome, so that value is scored, as there. A helper
that cannot run at all is the infrastructure's fault (`GetterFailed`).

They need a guest with a desktop (``Guest.has_desktop``), as the Chrome setup steps do.
The URL getters (``active_tab_url_parse``, ``url_dashPart``, ``url_path_parse``) are
pure functions of the active address and the getter's config once it is read.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import time
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from cleanroom.guests.base import CommandNotStarted
from cleanroom.verifiers.osworld import devtools
from cleanroom.verifiers.osworld.cached_file import CachedFile
from cleanroom.verifiers.osworld.getters.core import (
    Getter,
    GetterContext,
    GetterFailed,
    cache_write,
)

_QUICK_CONNECT_S = 10.0  # Playwright's connect, before OSWorld's getters start a Chrome
_TABS_LOAD_S = 30.0  # open_tabs_info's limit per tab
# All tabs' waits together: what the agent left (many tabs that never load) cannot keep
# the checker past its limit; the tabs left unasked count as not loaded, as OSWorld's
# would be after their own waits.
_TABS_TOTAL_S = 120.0
_ADDRESS_TOTAL_S = 30.0  # reading the addresses alone, no load waited for
_PAGE_TRIES = 2  # page_info's attempts


def _helper(ctx: GetterContext, op: str, args: dict[str, Any], *waits: float) -> dict[str, Any]:
    if not ctx.guest.has_desktop:
        # Elsewhere 127.0.0.1:9222 could be some other Chrome than the rollout's.
        raise GetterFailed(
            f"the Chrome getters need a desktop session, which guest {ctx.guest.kind!r} "
            "does not have"
        )
    try:
        return devtools.run_helper(ctx.guest, op, args, devtools.helper_limit(*waits))
    except devtools.DevToolsFailed as exc:
        raise GetterFailed(str(exc)) from exc


def _relaunch(ctx: GetterContext) -> None:
    """Start Chrome with its debugging port, as OSWorld's getters do when none answers."""
    with contextlib.suppress(CommandNotStarted):  # OSWorld's launch only logs a failure
        ctx.guest.spawn(devtools.RELAUNCH, shell=False)
    time.sleep(devtools.RELAUNCH_WAIT_S)


def _tabs(ctx: GetterContext, load_s: float, total_s: float) -> dict[str, Any]:
    args = {
        "connect_s": _QUICK_CONNECT_S,
        "load_s": load_s,
        "total_s": total_s,
        "max_bytes": devtools.LISTING_CAP_BYTES,
    }
    return _helper(ctx, "tabs", args, _QUICK_CONNECT_S, total_s, devtools.TAB_PAST_S)


def get_open_tabs_info(ctx: GetterContext, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tab's ``title`` and ``url``, once loaded (30 s each; ``Load timeout`` as its
    title when it did not load, ``Error encountered`` when it could not be read). When
    Chrome does not answer, one is started and asked again; ``[]`` when that fails too."""
    answer = _tabs(ctx, _TABS_LOAD_S, _TABS_TOTAL_S)
    if not answer.get("connected"):
        _relaunch(ctx)
        answer = _tabs(ctx, _TABS_LOAD_S, _TABS_TOTAL_S)
        if not answer.get("connected"):
            return []
    return [tab_info(tab) for tab in answer["tabs"]]


def tab_info(tab: dict[str, Any]) -> dict[str, Any]:
    """One tab as ``open_tabs_info`` lists it."""
    if "error" in tab:
        return {"title": "Error encountered", "url": tab.get("url")}
    if not tab.get("loaded"):
        return {"title": "Load timeout", "url": tab.get("url")}
    return {"title": tab.get("title"), "url": tab.get("url")}


def get_active_url_from_accessTree(ctx: GetterContext, config: dict[str, Any]) -> str | None:
    """The active tab's address as the address bar shows it, after ``goto_prefix``
    (``https://`` by default); None when Chrome shows no tab or an empty bar."""
    answer = _tabs(ctx, 0.0, _ADDRESS_TOTAL_S)
    if not answer.get("connected"):
        return None
    return devtools.active_url(answer["tabs"], config.get("goto_prefix", "https://"))


def _visit(ctx: GetterContext, url: str, pdf: bool = False) -> dict[str, Any]:
    args = {
        "url": url,
        "connect_s": _QUICK_CONNECT_S,
        "load_s": devtools.LOAD_S,
        "max_bytes": devtools.PDF_CAP_BYTES if pdf else devtools.PAGE_CAP_CHARS,
        "pdf": pdf,
    }
    printing = devtools.PDF_PRINT_S if pdf else 0.0
    waits = (_QUICK_CONNECT_S, devtools.LOAD_S, 4 * devtools.TAB_PAST_S, printing)
    return _helper(ctx, "visit", args, *waits)


def get_active_tab_info(ctx: GetterContext, config: dict[str, Any]) -> dict[str, Any] | None:
    """The active tab's address loaded afresh in a new browser context: its ``title``,
    ``url`` and HTML ``content``; ``Load timeout`` as the title when it did not load in
    60 s; None when there is no active tab, no Chrome or the page failed to load."""
    url = get_active_url_from_accessTree(ctx, config)
    if url is None:
        return None
    answer = _visit(ctx, url)
    if not answer.get("connected"):
        return None
    page = answer["page"]
    if "error" in page:
        return None
    title = page.get("title") if page.get("loaded") else "Load timeout"
    return {"title": title, "url": page.get("url"), "content": page.get("content", "")}


def get_page_info(ctx: GetterContext, config: dict[str, Any]) -> dict[str, Any]:
    """The page at the config's ``url`` loaded in a new browser context: ``title``,
    ``url`` and ``content``. OSWorld tries twice (starting a Chrome when none answers)
    and then gives ``Connection failed`` as the title with no content."""
    url = config.get("url")
    if not isinstance(url, str):
        raise GetterFailed(f"page_info needs a 'url', got {url!r}")
    for _ in range(_PAGE_TRIES):
        answer = _visit(ctx, url)
        if not answer.get("connected"):
            _relaunch(ctx)
            answer = _visit(ctx, url)
        page = answer.get("page")
        if answer.get("connected") and page and page.get("loaded") and "error" not in page:
            return {"title": page.get("title"), "url": page.get("url"), "content": page["content"]}
    return {"title": "Connection failed", "url": url, "content": ""}


_PDF_TRIES = 3  # pdf_from_url's attempts
PLACEHOLDER_PDF = b"%PDF-1.4\n%EOF\n"  # what OSWorld writes when every attempt failed


def get_pdf_from_url(ctx: GetterContext, config: dict[str, Any]) -> CachedFile:
    """The page at ``path`` loaded in a new browser context and printed to PDF (Letter,
    no margins), saved as ``dest`` in the task cache. OSWorld tries three times (starting
    a Chrome when none answers) and then saves a placeholder PDF with no page."""
    url, dest = config.get("path"), config.get("dest")
    if not isinstance(url, str) or not isinstance(dest, str):
        raise GetterFailed(f"pdf_from_url needs a 'path' and a 'dest', got {config!r}")
    for _ in range(_PDF_TRIES):
        answer = _visit(ctx, url, pdf=True)
        if not answer.get("connected"):
            _relaunch(ctx)
            answer = _visit(ctx, url, pdf=True)
        page = answer.get("page") or {}
        if page.get("pdf") and "error" not in page:
            try:
                return cache_write(ctx, dest, base64.b64decode(page["pdf"], validate=True))
            except binascii.Error as exc:
                raise GetterFailed(f"Chrome's PDF of {url} is not base64: {exc}") from exc
    return cache_write(ctx, dest, PLACEHOLDER_PDF)


def _from_active_url(parse: Any) -> Getter:
    """A getter parsing the active tab's address: None without one, as OSWorld's."""

    def getter(ctx: GetterContext, config: dict[str, Any]) -> Any:
        url = get_active_url_from_accessTree(ctx, config)
        if url is None:
            return None
        try:
            return parse(url, config)
        except (KeyError, TypeError, AttributeError) as exc:
            # OSWorld's getter raises on these configs: the task cannot be scored.
            raise GetterFailed(f"cannot parse the active tab's URL with {config!r}: {exc}") from exc

    getter.__doc__ = parse.__doc__
    return getter


def query_parse(url: str, config: dict[str, Any]) -> dict[str, Any]:
    """``active_tab_url_parse``: the first value of each of ``parse_keys`` in the query
    (``''`` when absent), renamed by ``replace``, split at commas with ``split_list``."""
    query = parse_qs(urlparse(url).query)
    params: dict[str, Any] = {key: query.get(key, [""])[0] for key in config["parse_keys"]}
    if "replace" in config:
        for key in config["replace"].keys():  # noqa: SIM118 - a list must raise, as in OSWorld
            value = params.pop(key)
            params[config["replace"][key]] = value
    if config.get("split_list", False):
        params = {key: params[key].split(",") for key in params.keys()}  # noqa: SIM118
    return params


def dash_part(url: str, config: dict[str, Any]) -> Any:
    """``url_dashPart``: the ``partIndex``-th ``/``-separated part of the address (its
    query cut with ``needDeleteId``), as a string or ``{key: part}``; None when the index
    is no integer or out of range, or ``returnType`` is neither."""
    try:
        index = int(config["partIndex"])
    except (ValueError, TypeError):
        return None
    parts = url.split("/")
    if index >= len(parts):
        return None
    part = parts[index]
    if config.get("needDeleteId", False):
        part = part.split("?")[0]
    if config["returnType"] == "string":
        return part
    if config["returnType"] == "json":
        return {config["key"]: part}
    return None


def _price_range(value: Any) -> str:
    wanted = "50_PERCENT_ off & more"
    others = ("30_PERCENT_ off & more", "20_PERCENT_ off & more")
    if value is not None and wanted in value and not any(o in value for o in others):
        return wanted
    return "not_50_PERCENT_ off & more"


def path_parse(url: str, config: dict[str, Any]) -> dict[str, Any]:
    """``url_path_parse`` (OSWorld's Macy's product filter): whether the path names men's
    clothing, shirts and short sleeves, and the ``parse_keys`` read from the first pair of
    comma-separated key and value segments."""
    path = unquote(urlparse(url).path)
    result: dict[str, Any] = {"mens_clothing": True if "mens-clothing" in path else None}
    segments = path.strip("/").split("/")
    pairs: dict[str, Any] = {}
    shirts = "shirts" in path
    short_sleeve = "short-sleeve" in path
    for i in range(len(segments) - 1):
        if "," in segments[i] and "," in segments[i + 1]:
            names = [k.strip() for k in segments[i].split(",")]
            values = [v.strip() for v in segments[i + 1].split(",")]
            for name, value in zip(names, values, strict=False):
                if name == "Price_discount_range":
                    pairs[name] = [item.strip() for item in value.split("|")] if value else None
                else:
                    pairs[name] = value if value else None
                if name == "Product_department" and value in ("shirts", "Shirts", "Shirt"):
                    shirts = True
                if name == "Sleeve_length" and value in ("short-sleeve", "Short Sleeve"):
                    short_sleeve = True
            break
    for name in ("Men_regular_size_t", "Price_discount_range"):
        pairs.setdefault(name, None)
    result["shirts"] = True if shirts else None
    result["short_sleeve"] = True if short_sleeve else None
    for key in config["parse_keys"]:
        if key in pairs:
            result[key] = _price_range(pairs[key]) if key == "Price_discount_range" else pairs[key]
    return result


Question = tuple[str, str]  # (kind, selector), as the helper's query operation takes them


def html_questions(config: dict[str, Any]) -> list[Question]:
    """What ``active_tab_html_parse`` asks the page for ``config``, each question once."""
    category = config["category"]
    asked: list[Question] = []
    if category == "class":
        for key, kind in (
            ("class_multiObject", "texts"),
            ("class_multiObject_child", "direct_texts"),
            ("class_multiObject_only_child", "h3_texts"),
            ("class_multiObject_search_exist", "texts"),
            ("class_singleObject", "texts"),
        ):
            asked += [(kind, "." + name) for name in config.get(key, {})]
    elif category == "xpath":
        asked += [("xpath_text", xpath) for xpath in config.get("xpathObject", {})]
    elif category == "input":
        asked += [("xpath_value", xpath) for xpath in config.get("inputObject", {})]
    elif category == "class&url":
        asked += [("texts", "." + name) for name in config.get("class_multiObject", {})]
        asked += [("li_spans", "." + name) for name in config.get("class_multiObject_li", {})]
    elif category == "label":
        raise GetterFailed("the label category (Playwright's text= selector) is not reproduced")
    return list(dict.fromkeys(asked))


def _texts(answer: Any, strip: bool = True) -> list[str]:
    """A list answer's texts, stripped as Python strips them (the direct text nodes come
    trimmed by the page, as OSWorld's script trims them); [] for a failed question, as
    OSWorld's ``safely_get_*`` give."""
    if not isinstance(answer, list):
        return []
    texts = [text if isinstance(text, str) else "" for text in answer]
    return [text.strip() for text in texts] if strip else texts


def _pick(texts: list[str], objects: dict[str, Any], values: dict[str, Any]) -> None:
    for order, key in objects.items():
        index = int(order)
        values[key] = texts[index] if len(texts) > index else ""


def _class_values(config: dict[str, Any], answer: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, objects in config.get("class_multiObject", {}).items():
        _pick(_texts(answer("texts", "." + name)), objects, values)
    for name, objects in config.get("class_multiObject_child", {}).items():
        _pick(_texts(answer("direct_texts", "." + name), strip=False), objects, values)
    for name, objects in config.get("class_multiObject_only_child", {}).items():
        _pick(_texts(answer("h3_texts", "." + name)), objects, values)
    for name, wanted in config.get("class_multiObject_search_exist", {}).items():
        texts = _texts(answer("texts", "." + name))
        for item in wanted:
            if item != "is_other_exist":
                values[item] = item in texts
        if "is_other_exist" in wanted:
            if any(text not in wanted for text in texts):
                values["is_other_exist"] = True
            values.setdefault("is_other_exist", False)
    for name, key in config.get("class_singleObject", {}).items():
        texts = _texts(answer("texts", "." + name))
        values[key] = texts[0] if texts else ""
    return values


def _xpath_value(found: Any, field: str) -> str:
    if not isinstance(found, dict) or not found.get("count") or "error" in found:
        return ""
    text = found.get(field)
    text = text.strip() if isinstance(text, str) else text
    return text if text else ""


def _listed(texts: list[str], wanted: list[Any], values: dict[str, Any]) -> None:
    for item in wanted:
        if any(item.lower() == text.lower() for text in texts):
            values[item.lower()] = True
    for text in texts:
        if all(text.lower() not in item.lower() for item in wanted):
            values["is_other_exist"] = True
            break
    values.setdefault("is_other_exist", False)


def _class_url_values(config: dict[str, Any], answer: Any, page_url: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, wanted in config.get("class_multiObject", {}).items():
        _listed(_texts(answer("texts", "." + name)), wanted, values)
    for name, wanted in config.get("class_multiObject_li", {}).items():
        _listed(_texts(answer("li_spans", "." + name)), wanted, values)
    for key in config.get("url_include_expected", []):
        values.setdefault(key.lower(), key.lower() in page_url.lower())
    for key, value in config.get("url_include_expected_multichoice", {}).items():
        values.setdefault(value.lower(), key.lower() in page_url.lower())
    return values


def html_values(config: dict[str, Any], answers: dict[Question, Any], page_url: str) -> Any:
    """``active_tab_html_parse``'s value from the page's answers to `html_questions`, as
    OSWorld's getter builds it from Playwright's."""

    def answer(kind: str, selector: str) -> Any:
        return answers.get((kind, selector))

    category = config["category"]
    if category == "class":
        return _class_values(config, answer)
    if category == "xpath":
        xpaths = config.get("xpathObject", {})
        return {key: _xpath_value(answer("xpath_text", x), "text") for x, key in xpaths.items()}
    if category == "input":
        inputs = config.get("inputObject", {})
        return {key: _xpath_value(answer("xpath_value", x), "value") for x, key in inputs.items()}
    if category == "class&url":
        return _class_url_values(config, answer, page_url)
    return {}


def get_active_tab_html_parse(ctx: GetterContext, config: dict[str, Any]) -> Any:
    """Texts read from the tab at the active address (each tab waited for, up to 60 s):
    by class, XPath or input value, as the config's ``category`` says. None without an
    active address, ``{}`` when no tab shows it."""
    url = get_active_url_from_accessTree(ctx, config)
    if url is None:
        return None
    try:
        questions = html_questions(config)
    except (KeyError, AttributeError, TypeError) as exc:
        raise GetterFailed(f"active_tab_html_parse cannot read its config: {exc}") from exc
    args = {
        "url": url,
        "queries": [{"kind": kind, "selector": selector} for kind, selector in questions],
        "connect_s": _QUICK_CONNECT_S,
        "load_s": devtools.LOAD_S,
        "total_s": _TABS_TOTAL_S,
        "max_bytes": devtools.PAGE_CAP_CHARS,
    }
    answer = _helper(ctx, "query", args, _QUICK_CONNECT_S, _TABS_TOTAL_S, devtools.TAB_PAST_S)
    if not answer.get("connected") or not answer.get("found"):
        return {}
    replies = answer.get("answers")
    replies = replies if isinstance(replies, list) else []
    answers = dict(zip(questions, replies, strict=False))
    try:
        return html_values(config, answers, str(answer.get("url", "")))
    except (KeyError, AttributeError, TypeError, ValueError) as exc:
        raise GetterFailed(f"active_tab_html_parse cannot read its config: {exc}") from exc


CHROME_TAB_GETTERS: dict[str, Getter] = {
    "active_tab_html_parse": get_active_tab_html_parse,
    "open_tabs_info": get_open_tabs_info,
    "active_url_from_accessTree": get_active_url_from_accessTree,
    "active_tab_info": get_active_tab_info,
    "page_info": get_page_info,
    "pdf_from_url": get_pdf_from_url,
    "active_tab_url_parse": _from_active_url(query_parse),
    "url_dashPart": _from_active_url(dash_part),
    "url_path_parse": _from_active_url(path_parse),
}
"""The getters that ask the running Chrome, by OSWorld's type name."""
