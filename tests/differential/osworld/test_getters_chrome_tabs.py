"""The Chrome tab getters' URL parsing and the close-tabs step's URL comparison against
OSWorld's own functions. OSWorld's getters read the active address from the
accessibility tree; here that one call is replaced by the address under test, so the
rest of each getter is OSWorld's code, unchanged."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("desktop_env")

from hypothesis import given
from hypothesis import strategies as st

from cleanroom.verifiers.osworld.checker_env_worker import placeholders
from cleanroom.verifiers.osworld.devtools import same_url
from cleanroom.verifiers.osworld.getters.chrome_tabs import dash_part, path_parse, query_parse

from .reference import EXAMPLES, LEFT_OUT, Raised, call_cleanroom, call_osworld, osworld

SEGMENT = st.sampled_from(
    ["a", "b-c", "mens-clothing", "shirts", "short-sleeve", "x?id=3", "", "k,l", "1,2", "%20s"]
)
QUERY = st.sampled_from(["", "?q=1", "?q=a,b&r=2", "?q=&q=x", "?from=SEA&to=NYC", "?q=%26"])
URLS = st.builds(
    lambda scheme, host, parts, query: f"{scheme}{host}/{'/'.join(parts)}{query}",
    st.sampled_from(["https://", "https://www.", ""]),
    st.sampled_from(["macys.com", "x.org", "a.b.co.uk"]),
    st.lists(SEGMENT, max_size=5),
    QUERY,
)
MACYS = st.builds(
    lambda keys, values: (
        "https://www.macys.com/shop/mens-clothing/" + ",".join(keys) + "/" + ",".join(values)
    ),
    st.lists(
        st.sampled_from(
            ["Men_regular_size_t", "Price_discount_range", "Sleeve_length", "Product_department"]
        ),
        min_size=1,
        max_size=3,
    ),
    st.lists(
        st.sampled_from(
            ["L", "shirts", "Short Sleeve", "50_PERCENT_ off & more|30_PERCENT_ off & more", ""]
        ),
        min_size=1,
        max_size=3,
    ),
)


@pytest.fixture
def active(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The address OSWorld's getters read as the active tab's, set by each case."""
    holder = {"url": ""}
    chrome = osworld().getter_modules["chrome"]
    monkeypatch.setattr(chrome, "get_active_url_from_accessTree", lambda env, config: holder["url"])
    yield holder


def compare(name: str, ours: Any, url: str, config: dict[str, Any], active: dict[str, str]) -> None:
    active["url"] = url
    theirs = call_osworld(osworld().getters[name], None, config)
    mine = call_cleanroom(ours, url, config)
    if isinstance(theirs, Raised):
        assert isinstance(mine, Raised), (url, config, mine)
    else:
        assert mine == theirs, (url, config)


@EXAMPLES
@given(
    url=URLS,
    keys=st.lists(st.sampled_from(["q", "r", "from", "to", "zz"]), max_size=3, unique=True),
    split=st.booleans(),
    rename=st.booleans(),
)
def test_active_tab_url_parse_is_osworlds(
    active: dict[str, str], url: str, keys: list[str], split: bool, rename: bool
) -> None:
    config: dict[str, Any] = {"parse_keys": keys, "split_list": split}
    if rename:
        config["replace"] = {"q": "query"}
    compare("active_tab_url_parse", query_parse, url, config, active)


@EXAMPLES
@given(
    url=URLS,
    index=st.sampled_from([0, 2, 3, 4, "4", "x", None, 9]),
    kind=st.sampled_from(["string", "json", "other"]),
    delete_id=st.booleans(),
)
def test_url_dash_part_is_osworlds(
    active: dict[str, str], url: str, index: Any, kind: str, delete_id: bool
) -> None:
    config = {"partIndex": index, "returnType": kind, "key": "k", "needDeleteId": delete_id}
    compare("url_dashPart", dash_part, url, config, active)


@EXAMPLES
@given(
    url=MACYS | URLS,
    keys=st.lists(
        st.sampled_from(["Men_regular_size_t", "Price_discount_range", "Sleeve_length", "zz"]),
        max_size=3,
    ),
)
def test_url_path_parse_is_osworlds(active: dict[str, str], url: str, keys: list[str]) -> None:
    compare("url_path_parse", path_parse, url, {"parse_keys": keys}, active)


HOSTS = st.sampled_from(
    ["www.airbnb.com", "airbnb.com.sg", "bbc.co.uk", "www.bbc.com", "docs.a.org", "127.0.0.1:8000"]
)
LINKS = st.builds(
    lambda scheme, host, path, query: f"{scheme}{host}{path}{query}",
    st.sampled_from(["https://", "http://", ""]),
    HOSTS,
    st.sampled_from(["", "/", "/x", "/x/"]),
    st.sampled_from(["", "?q=1", "#top"]),
)


@EXAMPLES
@given(first=LINKS, second=LINKS)
def test_close_tabs_compares_urls_as_osworld(first: str, second: str) -> None:
    with placeholders(LEFT_OUT):
        utils = importlib.import_module("desktop_env.evaluators.metrics.utils")
    assert same_url(first, second) == utils.compare_urls(first, second)
