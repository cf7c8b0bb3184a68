"""OSWorld's ``rule_relativeTime`` getter: a rule whose dates are relative to today.

The rules name one day (``relativeTime.from``) or a range (``from`` and ``to``) in words
("tomorrow", "next Monday", "10th next month", ...), and the ``expected`` strings carry
placeholders (``{DoW}``, ``{Month}``, ``{Day0D}``, ...) that become that day's date. The
day is computed in the rules' ``timezone``, UTC when it names none (OSWorld asks a web
service where its harness is; UTC is what it falls back to offline).

OSWorld writes the dates into the task's own config; cleanroom returns a copy and leaves
the task as it was. Each phrase is computed exactly as OSWorld computes it, quirks
included ("first monday four months later" has no answer in August, and a phrase OSWorld
does not handle in a position is a failure there, as it crashes OSWorld).
"""

from __future__ import annotations

import copy
import zoneinfo
from datetime import datetime, timedelta, tzinfo
from functools import cache
from typing import Any

from cleanroom.verifiers.osworld.getters.core import GetterContext, GetterFailed

# The phrases OSWorld knows; a number is a plain offset in days.
PHRASES: dict[str, int | None] = {
    "tomorrow": 1,
    "5th next month": None,
    "10th next month": None,
    "11th next month": None,
    "this month": None,
    "this Saturday": None,
    "this Sunday": None,
    "next Monday": None,
    "next Friday": None,
    "next Saturday": None,
    "next Sunday": None,
    "next week Friday": None,
    "next week Saturday": None,
    "next week Sunday": None,
    "first monday four months later": None,
    "first monday eight months later": None,
    "next Monday split": None,
    "next Friday split": None,
}

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTHS_FULL = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


class UnknownPhrase(GetterFailed):
    """A relative time OSWorld cannot compute in that position (it crashes there)."""


def format_day(template: str, day: datetime) -> str:
    """The template with its placeholders filled from ``day``: each one once, in
    OSWorld's order (a second ``{DoW}`` stays as it is, as there)."""
    month0 = f"0{day.month}" if day.month < 10 else str(day.month)
    day0 = f"0{day.day}" if day.day < 10 else str(day.day)
    for placeholder, value in (
        ("{DoW}", _DAYS[day.weekday()]),
        ("{Month}", _MONTHS[day.month - 1]),
        ("{DayD}", str(day.day)),
        ("{Year}", str(day.year)),
        ("{Month0D}", month0),
        ("{month}", _MONTHS_FULL[day.month - 1].lower()),
        ("{MonthFull}", _MONTHS_FULL[day.month - 1]),
        ("{Day0D}", day0),
        ("{MonthD}", str(day.month)),
    ):
        template = template.replace(placeholder, value, 1)
    return template


@cache
def _zone_names() -> dict[str, str]:
    # "localtime" is the host's own zone and "Factory" no zone: neither is a name pytz
    # (OSWorld's library) knows.
    names = zoneinfo.available_timezones() - {"localtime", "Factory"}
    return {name.lower(): name for name in names}


def timezone_of(rules: dict[str, Any]) -> tzinfo:
    """The rules' time zone as OSWorld's pytz looks it up (case does not matter, "UTC"
    in any case is UTC); an unknown name is UTC, as in OSWorld."""
    name = rules.get("timezone")
    if name is None:
        return zoneinfo.ZoneInfo("UTC")
    if not isinstance(name, str):
        raise GetterFailed(f"rule_relativeTime: timezone {name!r} is not a name")
    names = _zone_names()
    if not names:
        raise GetterFailed("rule_relativeTime: this machine has no time zone database")
    # pytz's old spelling of "+" and "-" in names is still read.
    key = name.replace("_plus_", "+").replace("_minus_", "-").lower()
    if name.upper() == "UTC" or key not in names:
        return zoneinfo.ZoneInfo("UTC")
    return zoneinfo.ZoneInfo(names[key])


def _known(phrase: Any) -> str:
    if not isinstance(phrase, str) or phrase not in PHRASES:
        raise UnknownPhrase(f"rule_relativeTime: unknown relative time {phrase!r}")
    return phrase


def _day_of_next_month(now: datetime, day: int, zone: tzinfo) -> datetime:
    year = now.year + 1 if now.month == 12 else now.year
    month = now.month + 1 if now.month < 12 else 1
    return datetime(year, month, day, tzinfo=zone)


def _first_monday(now: datetime, months: int, zone: tzinfo) -> datetime:
    # OSWorld's arithmetic, kept: (month + n) % 12 is 0 for one month of the year,
    # where it has no answer.
    year = now.year + 1 if now.month >= 13 - months else now.year
    month = (now.month + months) % 12
    try:
        first = datetime(year, month, 1, tzinfo=zone)
    except ValueError as exc:
        raise UnknownPhrase(
            f"rule_relativeTime: OSWorld has no month {month} after {now:%B} ({exc})"
        ) from exc
    return first + timedelta(days=((6 - first.weekday()) + 1) % 7)


def _single_day(phrase: str, now: datetime, zone: tzinfo) -> datetime:
    offset = PHRASES[phrase]
    if offset is not None:
        return now + timedelta(days=offset)
    weekday = now.weekday()
    if phrase == "5th next month":
        return _day_of_next_month(now, 5, zone)
    if phrase == "10th next month":
        return _day_of_next_month(now, 10, zone)
    if phrase == "this month":
        return now
    if phrase == "next Monday":
        return now + timedelta(days=(6 - weekday) + 1)
    if phrase == "first monday four months later":
        return _first_monday(now, 4, zone)
    if phrase == "first monday eight months later":
        return _first_monday(now, 8, zone)
    raise UnknownPhrase(f"rule_relativeTime: OSWorld computes no single day {phrase!r}")


def _from_day(phrase: str, now: datetime, zone: tzinfo) -> datetime:
    offset = PHRASES[phrase]
    if offset is not None:
        return now + timedelta(days=offset)
    weekday = now.weekday()
    if phrase == "this Saturday":
        return now + timedelta(days=5 - weekday)
    if phrase == "10th next month":
        return _day_of_next_month(now, 10, zone)
    if phrase in ("next Monday", "next Monday split"):
        return now + timedelta(days=(6 - weekday) + 1)
    if phrase == "next Friday":
        days = 4 - weekday if weekday < 4 else 7 if weekday == 4 else (7 - weekday) + 4
        return now + timedelta(days=days)
    if phrase == "next Saturday":
        days = 5 - weekday if weekday < 5 else 7 if weekday == 5 else 6
        return now + timedelta(days=days)
    if phrase == "next week Friday":
        return now + timedelta(days=(7 - weekday) + 4)
    if phrase == "next week Saturday":
        return now + timedelta(days=(7 - weekday) + 5)
    if phrase == "next week Sunday":
        return now + timedelta(days=(7 - weekday) + 6)
    raise UnknownPhrase(f"rule_relativeTime: OSWorld computes no start day {phrase!r}")


def _to_day(phrase: str, start: str, start_day: datetime, now: datetime, zone: tzinfo) -> datetime:
    offset = PHRASES[phrase]
    if offset is not None:
        return now + timedelta(days=offset)
    weekday = now.weekday()
    if phrase == "this Sunday":
        return now + timedelta(days=6 - weekday)
    if phrase == "11th next month":
        return _day_of_next_month(now, 11, zone)
    if phrase in ("next Friday", "next Friday split"):
        if start in ("next Monday", "next Monday split"):
            return start_day + timedelta(days=4)  # the Friday of that Monday's week
        return now + timedelta(days=4 - weekday if weekday < 4 else (6 - weekday) + 5)
    if phrase == "next Sunday":
        if start in ("next Friday", "next Saturday"):
            return start_day + timedelta(days=6 - start_day.weekday())
        return now + timedelta(days=6 - weekday if weekday < 6 else 7)
    if phrase == "next week Sunday":
        if start in ("next week Friday", "next week Saturday"):
            return start_day + timedelta(days=6 - start_day.weekday())
        return now + timedelta(days=(7 - weekday) + 6)
    raise UnknownPhrase(f"rule_relativeTime: OSWorld computes no end day {phrase!r}")


def _fill(expected: dict[str, Any], key: str, day: datetime) -> None:
    template = expected[key]
    if not isinstance(template, str):
        raise GetterFailed(f"rule_relativeTime: expected[{key!r}] is not a string")
    expected[key] = format_day(template, day)


def resolve_relative_time(rules: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A copy of the rules with the ``expected`` dates filled for ``now`` (an aware
    time in the rules' zone), as OSWorld fills them."""
    zone = now.tzinfo
    assert zone is not None
    relative = rules["relativeTime"]
    resolved = copy.deepcopy(rules)
    expected = resolved["expected"]
    if not isinstance(relative, dict) or not isinstance(expected, dict):
        raise GetterFailed("rule_relativeTime: relativeTime and expected must be objects")
    start = _known(relative.get("from"))
    if "to" not in relative:
        _fill(expected, "time", _single_day(start, now, zone))
        return resolved
    end = _known(relative["to"])
    start_day = _from_day(start, now, zone)
    keys = ("puDay", "puMonth", "puYear") if start == "next Monday split" else ("from",)
    for key in keys:
        _fill(expected, key, start_day)
    end_day = _to_day(end, start, start_day, now, zone)
    keys = ("doDay", "doMonth", "doYear") if end == "next Friday split" else ("to",)
    for key in keys:
        _fill(expected, key, end_day)
    return resolved


def get_rule_relativeTime(ctx: GetterContext | None, config: dict[str, Any]) -> dict[str, Any]:
    """The ``rules`` with their relative dates made absolute for today."""
    rules = config.get("rules")
    if not isinstance(rules, dict) or "relativeTime" not in rules or "expected" not in rules:
        raise GetterFailed("rule_relativeTime needs rules with relativeTime and expected")
    try:
        return resolve_relative_time(rules, datetime.now(timezone_of(rules)))
    except KeyError as exc:
        raise GetterFailed(f"rule_relativeTime: the rules have no {exc}") from exc
