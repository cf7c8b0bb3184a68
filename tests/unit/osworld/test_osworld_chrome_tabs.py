"""The pure rules of the Chrome tab getters and steps: the address bar's text, the active
tab, OSWorld's URL comparison, the URL getters' parsing and the History database."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from cleanroom.verifiers.osworld.devtools import active_url, omnibox_text, same_url
from cleanroom.verifiers.osworld.getters.chrome_tabs import (
    dash_part,
    html_questions,
    html_values,
    path_parse,
    query_parse,
    tab_info,
)
from cleanroom.verifiers.osworld.getters.core import GetterFailed
from cleanroom.verifiers.osworld.setup_steps import chrome_time, history_database


@pytest.mark.parametrize(
    ("url", "text"),
    [
        ("https://www.example.com/", "example.com"),
        ("https://www.example.com/a/b?q=1#f", "example.com/a/b?q=1#f"),
        ("http://127.0.0.1:8000/page.html", "127.0.0.1:8000/page.html"),
        ("https://docs.example.org/", "docs.example.org"),
        ("chrome://settings/passwords", "chrome://settings/passwords"),
        ("chrome://newtab/", ""),
        ("about:blank", ""),
    ],
)
def test_the_address_bar_drops_the_scheme_a_leading_www_and_a_bare_slash(
    url: str, text: str
) -> None:
    assert omnibox_text(url) == text


def test_the_active_url_is_the_visible_tab_behind_the_prefix() -> None:
    tabs = [
        {"url": "https://www.a.com/x", "visible": False},
        {"url": "https://www.b.com/y", "visible": True},
    ]

    assert active_url(tabs, "https://www.") == "https://www.b.com/y"
    assert active_url(tabs, "") == "b.com/y"


def test_no_visible_tab_or_an_empty_address_bar_gives_none() -> None:
    assert active_url([{"url": "https://a.com/", "visible": False}], "https://") is None
    assert active_url([{"url": "chrome://newtab/", "visible": True}], "https://") is None


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("https://www.tripadvisor.com", "https://www.tripadvisor.com/", True),
        ("https://www.airbnb.com", "https://airbnb.com.sg", True),
        ("https://www.bbc.co.uk/news", "https://bbc.com/news", True),
        ("lonelyplanet.com", "http://www.lonelyplanet.com/", True),
        ("https://a.com", "http://a.com", False),
        ("https://a.com/x?q=1", "https://a.com/x?q=2", False),
        ("https://docs.a.com", "https://a.com", False),
    ],
)
def test_urls_compare_as_osworlds_compare_urls(first: str, second: str, same: bool) -> None:
    assert same_url(first, second) is same


def test_a_tab_that_did_not_load_or_could_not_be_read_says_so() -> None:
    assert tab_info({"url": "u", "title": "T", "loaded": True}) == {"title": "T", "url": "u"}
    assert tab_info({"url": "u", "title": "T", "loaded": False})["title"] == "Load timeout"
    assert tab_info({"url": "u", "error": "gone"})["title"] == "Error encountered"


def test_query_parse_takes_the_first_value_renames_and_splits() -> None:
    url = "https://www.x.com/s?from=A%20B&to=C&to=D&tags=a,b"
    config = {"parse_keys": ["from", "to", "tags", "none"], "replace": {"from": "origin"}}

    assert query_parse(url, config) == {"to": "C", "tags": "a,b", "none": "", "origin": "A B"}
    split = query_parse(url, {"parse_keys": ["tags"], "split_list": True})
    assert split == {"tags": ["a", "b"]}


def test_dash_part_picks_a_slash_separated_part() -> None:
    url = "https://www.x.com/a/b-c?id=7"

    assert dash_part(url, {"partIndex": 4, "returnType": "string"}) == "b-c?id=7"
    assert dash_part(
        url, {"partIndex": "4", "needDeleteId": True, "returnType": "json", "key": "k"}
    ) == {"k": "b-c"}
    assert dash_part(url, {"partIndex": 9, "returnType": "string"}) is None
    assert dash_part(url, {"partIndex": "x", "returnType": "string"}) is None


def test_path_parse_reads_the_key_and_value_segments() -> None:
    url = (
        "https://www.macys.com/shop/mens-clothing/shop-all-mens-clothing/"
        "Men_regular_size_t,Price_discount_range,Sleeve_length/"
        "L,50_PERCENT_%20off%20%26%20more,Short%20Sleeve"
    )
    config = {"parse_keys": ["Men_regular_size_t", "Price_discount_range", "Sleeve_length"]}

    assert path_parse(url, config) == {
        "mens_clothing": True,
        "shirts": None,
        "short_sleeve": True,
        "Men_regular_size_t": "L",
        "Price_discount_range": "50_PERCENT_ off & more",
        "Sleeve_length": "Short Sleeve",
    }


def empty_history(path: Path) -> bytes:
    connection = sqlite3.connect(path)
    connection.executescript(
        "CREATE TABLE urls (id INTEGER PRIMARY KEY, url TEXT, title TEXT, visit_count INTEGER,"
        " typed_count INTEGER, last_visit_time INTEGER, hidden INTEGER);"
        "CREATE TABLE visits (id INTEGER PRIMARY KEY, url INTEGER, visit_time INTEGER,"
        " from_visit INTEGER, transition INTEGER, segment_id INTEGER, visit_duration INTEGER);"
    )
    connection.close()
    return path.read_bytes()


def test_the_history_database_holds_each_visit_at_its_chrome_time(tmp_path: Path) -> None:
    now = datetime(2024, 5, 1, 12, 0, 0)
    history = [{"url": "https://a.com/", "title": "A", "visit_time_from_now_in_seconds": 60}]

    data = history_database(empty_history(tmp_path / "empty"), history, now)

    (tmp_path / "History").write_bytes(data)
    connection = sqlite3.connect(tmp_path / "History")
    [(url, title, when)] = connection.execute("SELECT url, title, last_visit_time FROM urls")
    [(visit_url, visit_time)] = connection.execute("SELECT url, visit_time FROM visits")
    connection.close()
    assert (url, title) == ("https://a.com/", "A")
    assert when == visit_time == chrome_time(datetime(2024, 5, 1, 11, 59, 0))
    assert visit_url == 1


def test_html_parse_asks_each_question_once() -> None:
    config = {
        "category": "class",
        "class_singleObject": {"price": "p"},
        "class_multiObject": {"price": {"1": "second"}},
        "class_multiObject_child": {"route": {"0": "from"}},
    }

    assert html_questions(config) == [("texts", ".price"), ("direct_texts", ".route")]


def test_html_parse_by_class_picks_by_rank_and_gives_empty_text_for_what_is_missing() -> None:
    config = {
        "category": "class",
        "class_multiObject": {"city": {"0": "from", "2": "via"}},
        "class_multiObject_child": {"route": {"1": "to"}},
        "class_singleObject": {"price": "price", "none": "absent"},
    }
    answers = {
        ("texts", ".city"): ["  SEA ", "NYC"],
        ("direct_texts", ".route"): ["SEA", "NYC"],
        ("texts", ".price"): ["\n$5 "],
        ("texts", ".none"): {"error": "SyntaxError"},
    }

    assert html_values(config, answers, "") == {
        "from": "SEA",
        "via": "",
        "to": "NYC",
        "price": "$5",
        "absent": "",
    }


def test_html_parse_search_exist_flags_each_wanted_text_and_any_other() -> None:
    config = {
        "category": "class",
        "class_multiObject_search_exist": {"tag": ["a", "b", "is_other_exist"]},
    }

    assert html_values(config, {("texts", ".tag"): ["a", "c"]}, "") == {
        "a": True,
        "b": False,
        "is_other_exist": True,
    }
    assert html_values(config, {("texts", ".tag"): ["b"]}, "")["is_other_exist"] is False


def test_html_parse_by_xpath_and_input_gives_the_first_match_stripped() -> None:
    xpath = {"category": "xpath", "xpathObject": {"//h1": "title", "//h9": "none"}}
    inputs = {"category": "input", "inputObject": {"//input": "typed", "//p": "not_input"}}
    answers = {
        ("xpath_text", "//h1"): {"count": 2, "text": " Hello "},
        ("xpath_text", "//h9"): {"count": 0, "text": None},
        ("xpath_value", "//input"): {"count": 1, "value": " x "},
        ("xpath_value", "//p"): {"error": "not an input"},
    }

    assert html_values(xpath, answers, "") == {"title": "Hello", "none": ""}
    assert html_values(inputs, answers, "") == {"typed": "x", "not_input": ""}


def test_html_parse_class_and_url_reads_the_page_address() -> None:
    config = {
        "category": "class&url",
        "class_multiObject": {"chip": ["Red", "Blue"]},
        "url_include_expected": ["Size=M", "sale"],
        "url_include_expected_multichoice": {"sort=price": "cheapest"},
    }
    answers = {("texts", ".chip"): ["red", "Green"]}

    assert html_values(config, answers, "https://x.com/p?size=m&sort=price") == {
        "red": True,
        "is_other_exist": True,
        "size=m": True,
        "sale": False,
        "cheapest": True,
    }


def test_html_parse_label_category_is_not_reproduced() -> None:
    with pytest.raises(GetterFailed, match="label"):
        html_questions({"category": "label", "labelObject": {"Name": "n"}})
