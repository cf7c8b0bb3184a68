"""rule_relativeTime against OSWorld's, with both clocks set to the same instant.

OSWorld looks up the harness's time zone on the web when the rules name none; here it is
offline (its request fails) and falls back to UTC, as cleanroom always does. The rules
of the OSWorld-Verified tasks that use the getter are compared too, on every weekday and
month.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pytest

pytest.importorskip("desktop_env")

import requests
from hypothesis import given
from hypothesis import strategies as st

from cleanroom.verifiers.osworld.getters import relative_time

from .differences import DELIBERATE
from .reference import EXAMPLES, Raised, call_cleanroom, call_osworld, osworld

NO_TIMEZONE = "rule_relativeTime: rules without a timezone"


class FrozenClock(datetime):
    """``datetime`` whose ``now`` is one chosen instant, in the zone asked for."""

    instant: ClassVar[datetime] = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)

    @classmethod
    def now(cls, tz: Any = None) -> FrozenClock:  # type: ignore[override]
        moment = cls.instant.astimezone(tz) if tz is not None else cls.instant
        return cls(*moment.timetuple()[:6], moment.microsecond, tzinfo=moment.tzinfo)


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> type[FrozenClock]:
    def offline(*args: Any, **kwargs: Any) -> Any:
        raise requests.ConnectionError("the differential tests run offline")

    monkeypatch.setattr(relative_time, "datetime", FrozenClock)
    monkeypatch.setattr(osworld().getter_modules["misc"], "datetime", FrozenClock)
    monkeypatch.setattr(osworld().getter_modules["misc"].requests, "get", offline)
    return FrozenClock


def both(config: dict[str, Any]) -> tuple[Any, Any]:
    """Both getters on their own copy of the config (OSWorld's writes into its copy)."""
    mine = call_cleanroom(relative_time.get_rule_relativeTime, None, copy.deepcopy(config))
    theirs = call_osworld(osworld().getters["rule_relativeTime"], None, copy.deepcopy(config))
    return mine, theirs


def agree(mine: Any, theirs: Any, case: Any) -> None:
    if isinstance(mine, Raised) or isinstance(theirs, Raised):
        assert isinstance(mine, Raised) and isinstance(theirs, Raised), (case, mine, theirs)
    else:
        assert mine == theirs, (case, mine, theirs)


PHRASES = [*relative_time.PHRASES, "yesterday", None]
PLACEHOLDERS = [
    "{DoW}",
    "{Month}",
    "{DayD}",
    "{Year}",
    "{Month0D}",
    "{month}",
    "{MonthFull}",
    "{Day0D}",
    "{MonthD}",
]
TEMPLATES = st.lists(st.sampled_from([*PLACEHOLDERS, ", ", "-", "x", "{"]), max_size=6).map("".join)
ZONES = st.sampled_from(
    [
        "absent",
        "UTC",
        "utc",
        "Europe/Zurich",
        "europe/ZURICH",
        "America/New_York",
        "Asia/Tokyo",
        "Pacific/Kiritimati",
        "Pacific/Pago_Pago",
        "Etc/GMT_plus_5",
        "Etc/GMT_minus_14",
        "Nowhere/Else",
        "Zürich",
        "",
        None,
    ]
)
INSTANTS = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2031, 12, 31), timezones=st.just(UTC)
)


KEYS = ["time", "from", "to", "puDay", "puMonth", "puYear", "doDay", "doMonth", "doYear"]
COUNTS = {"compared": 0, "valued": 0}


@EXAMPLES
@given(
    instant=INSTANTS,
    zone=ZONES,
    phrases=st.tuples(st.sampled_from(PHRASES), st.none() | st.sampled_from(PHRASES))
    | st.deferred(lambda: st.sampled_from(_task_phrases())),
    templates=st.lists(TEMPLATES, min_size=len(KEYS), max_size=len(KEYS)),
    spoilt=st.none() | st.tuples(st.sampled_from(KEYS), st.sampled_from(["drop", "list"])),
)
def test_rule_relative_time(
    frozen: type[FrozenClock],
    instant: datetime,
    zone: str | None,
    phrases: tuple[str | None, str | None],
    templates: list[str],
    spoilt: tuple[str, str] | None,
) -> None:
    frozen.instant = instant
    start, end = phrases
    relative: dict[str, Any] = {} if start is None else {"from": start}
    if end is not None:
        relative["to"] = end
    expected: dict[str, Any] = dict(zip(KEYS, templates, strict=True))
    if spoilt is not None:
        key, how = spoilt
        if how == "drop":
            del expected[key]
        else:
            expected[key] = [expected[key]]
    rules: dict[str, Any] = {"relativeTime": relative, "expected": expected, "other": 1}
    if zone != "absent":
        rules["timezone"] = zone
    config = {"type": "rule_relativeTime", "rules": rules}
    mine, theirs = both(config)
    agree(mine, theirs, config)
    COUNTS["compared"] += 1
    COUNTS["valued"] += not isinstance(mine, Raised)


def test_generated_rules_mostly_give_values() -> None:
    """The generated cases are not mostly broken rules (run after the one above)."""
    if COUNTS["compared"]:
        assert COUNTS["valued"] > COUNTS["compared"] // 4, COUNTS


def _task_phrases() -> list[tuple[str | None, str | None]]:
    """The (from, to) pairs the tasks use: most pairs of phrases are ones OSWorld computes
    no day for, so the generated cases draw these half the time."""
    return sorted(
        {(r["relativeTime"].get("from"), r["relativeTime"].get("to")) for r in TASK_RULES.values()},
        key=str,
    )


# The rules of every OSWorld-Verified task that uses the getter (Apache-2.0), by task.
TASK_RULES: dict[str, dict[str, Any]] = {
    "1704f00f": {
        "relativeTime": {"from": "next Monday split", "to": "next Friday split"},
        "timezone": "Europe/Zurich",
        "expected": {
            "puDay": "{DayD}",
            "puMonth": "{MonthD}",
            "puYear": "{Year}",
            "doDay": "{DayD}",
            "doMonth": "{MonthD}",
            "doYear": "{Year}",
        },
    },
    "368d9ba4": {"relativeTime": {"from": "this month"}, "expected": {"time": "{month}-weather"}},
    "47543840": {
        "relativeTime": {"from": "10th next month", "to": "11th next month"},
        "expected": {
            "start_location": "Boston Logan Intl Airport,\n\t\tBOS",
            "from": "{DoW}, {Month} {Day0D}, 12:00 PM",
            "to": "{DoW}, {Month} {Day0D}, 12:00 PM",
        },
    },
    "6c4c23a1": {
        "relativeTime": {"from": "5th next month"},
        "expected": {
            "start": "SEA",
            "end": "NYC",
            "time": "{DoW}, {Month} {Day0D}, {Year}",
            "category": "Miles",
        },
    },
    "82bc8d6a": {  # its time is a list: OSWorld 1.0.2 crashes on it, on every day
        "relativeTime": {"from": "next Monday"},
        "expected": {
            "fromStation": ["BOM"],
            "toStation": ["STO", "ARN"],
            "time": ["{Year}-{Month0D}-{Day0D}"],
        },
        "expect_in_result": True,
    },
    "b7895e80-a": {
        "relativeTime": {"from": "next week Saturday", "to": "next week Sunday"},
        "timezone": "America/New_York",
        "expected": {
            "from": "{DoW}, {Month} {Day0D}",
            "to": "{DoW}, {Month} {Day0D}",
            "city": "New York City Hotels",
        },
    },
    "b7895e80-b": {
        "relativeTime": {"from": "next week Friday", "to": "next week Sunday"},
        "timezone": "America/New_York",
        "expected": {
            "from": "Check In{DoW}, {Month} {Day0D}",
            "to": "Check Out{DoW}, {Month} {Day0D}",
        },
    },
    "da46d875": {
        "relativeTime": {"from": "first monday eight months later"},
        "expected": {"content": "Apply for a pass", "time": "{MonthFull} {Day0D}, 10:15 AM"},
    },
    "f79439ad": {
        "relativeTime": {"from": "10th next month"},
        "expected": {"originIata": "DUB", "time": "{Year}-{Month0D}-{DayD}"},
    },
    "fc6d8143": {
        "relativeTime": {"from": "tomorrow"},
        "expected": {"start": "JFK", "end": "ORD", "time": "{DoW}, {Month} {Day0D}, {Year}"},
    },
}

# Every weekday of a year, at times either side of midnight in the task's zones.
DAYS = [
    datetime(2025, 1, 1, hour, 30, tzinfo=UTC) + timedelta(days=day)
    for day in range(0, 366, 3)
    for hour in (0, 12, 23)
]


@pytest.mark.parametrize("task", sorted(TASK_RULES))
def test_task_rules(frozen: type[FrozenClock], task: str) -> None:
    for instant in DAYS:
        frozen.instant = instant
        config = {"type": "rule_relativeTime", "rules": TASK_RULES[task]}
        mine, theirs = both(config)
        agree(mine, theirs, (task, instant))
        if task != "82bc8d6a":
            assert not isinstance(mine, Raised) or (task == "da46d875" and instant.month == 4)


def test_first_monday_has_no_answer_in_one_month(frozen: type[FrozenClock]) -> None:
    frozen.instant = datetime(2025, 8, 15, 12, tzinfo=UTC)
    rules = {"relativeTime": {"from": "first monday four months later"}, "expected": {"time": ""}}
    mine, theirs = both({"rules": rules})
    assert isinstance(mine, Raised) and isinstance(theirs, Raised)


def test_rules_without_a_timezone_are_utc_where_osworld_is_online(
    frozen: type[FrozenClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one difference: online, OSWorld takes the zone of its harness's address."""
    frozen.instant = datetime(2025, 3, 3, 23, 30, tzinfo=UTC)  # Tuesday already in Tokyo
    misc = osworld().getter_modules["misc"]
    monkeypatch.setattr(misc, "get_timezone_from_ip", lambda: "Asia/Tokyo")
    rules = {"relativeTime": {"from": "tomorrow"}, "expected": {"time": "{DoW}"}}
    mine, theirs = both({"rules": rules})
    assert (mine["expected"]["time"], theirs["expected"]["time"]) == ("Tue", "Wed")
    assert NO_TIMEZONE in DELIBERATE
