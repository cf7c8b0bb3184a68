"""The token sweep's attribution: a token in a place of an environment it does not name."""

from __future__ import annotations

from cleanroom.core.isolation import SWEEP_TEST, RowResult
from cleanroom.core.sweep import (
    CLIPBOARD,
    HOME,
    PROFILE,
    Place,
    Reading,
    arrival_bound,
    merge_places,
    prove,
    sweep_rows,
    swept_tokens,
)
from cleanroom.core.tokens import parse, scan_text

ENVS = ["env00", "env01", "env02"]
TOK1 = "env01-w001-r0003-0a0b0c0d"
TOK2 = "env02-w001-r0004-1a1b1c1d"
HOME1 = Place("/pools/p/homes/env01", ("env01",), HOME)
HOME2 = Place("/pools/p/homes/env02", ("env02",), HOME)


def reading(place: Place, text: str, where: str) -> Reading:
    return Reading(place, tuple(scan_text(text, where)))


def by_pair(rows: list) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        out.setdefault((r.from_env, r.to_env), set()).add(r.result.value)
    return out


def test_a_token_in_another_environments_home_is_cross_from_it_to_that_home() -> None:
    leaked = f"{HOME2.name}/Documents/notes.txt"
    readings = [
        reading(HOME1, f"mine {TOK1}", f"{HOME1.name}/a.txt"),
        reading(HOME2, f"leaked {TOK1} and mine {TOK2}", leaked),
    ]
    rows = sweep_rows(0, 1, readings, ENVS)
    cross = [r for r in rows if r.result is RowResult.CROSS]
    assert [(r.from_env, r.to_env, r.test, r.window) for r in cross] == [
        ("env01", "env02", SWEEP_TEST, 1)
    ]
    assert cross[0].detail.startswith(TOK1) and leaked in cross[0].detail
    assert by_pair(rows)[("env02", "env01")] == {"clean"}


def test_places_read_clean_give_one_clean_row_per_ordered_pair() -> None:
    readings = [
        reading(HOME1, TOK1, "a"),
        reading(HOME2, TOK2, "b"),
        reading(Place("env00's clipboard", ("env00",), CLIPBOARD), "", "c"),
    ]
    rows = sweep_rows(0, 1, readings, ENVS)
    assert all(r.result is RowResult.CLEAN for r in rows)
    assert sorted((r.from_env, r.to_env) for r in rows) == sorted(
        (a, b) for a in ENVS for b in ENVS if a != b
    )


def test_an_unreadable_place_gives_lost_rows_into_its_owner_with_the_error() -> None:
    readings = [
        reading(HOME1, TOK1, "a"),
        Reading(HOME2, error=f"{HOME2.name}/.cache: Permission denied"),
        reading(Place("env00's clipboard", ("env00",), CLIPBOARD), "", "c"),
    ]
    rows = sweep_rows(0, 1, readings, ENVS)
    lost = [r for r in rows if r.result is RowResult.LOST]
    assert sorted((r.from_env, r.to_env) for r in lost) == [("env00", "env02"), ("env01", "env02")]
    assert all("Permission denied" in r.detail for r in lost)
    assert by_pair(rows)[("env02", "env01")] == {"clean"}


def test_an_environment_with_no_place_read_is_lost_not_clean() -> None:
    rows = sweep_rows(0, 1, [reading(HOME1, TOK1, "a")], ["env01", "env02"])
    assert by_pair(rows) == {("env01", "env02"): {"lost"}, ("env02", "env01"): {"clean"}}


def test_a_home_two_environments_share_holds_each_ones_token_as_foreign_to_the_other() -> None:
    places = merge_places(
        [
            ("/homes/env01", "env01", HOME),
            ("/homes/env01", "env02", HOME),  # the shared-home leak: env02's home is env01's
            ("/homes/env01/.config/libreoffice-env02", "env02", PROFILE),
        ]
    )
    assert places == [Place("/homes/env01", ("env01", "env02"), HOME)]  # the profile is inside
    text = f"{TOK1}\n{TOK2}\n"
    rows = sweep_rows(0, 1, [reading(places[0], text, "/homes/env01/proofs")], ["env01", "env02"])
    assert by_pair(rows) == {("env01", "env02"): {"cross"}, ("env02", "env01"): {"cross"}}


def test_a_folder_nested_in_another_environments_place_is_kept() -> None:
    places = merge_places(
        [("/homes/env01", "env01", HOME), ("/homes/env01/profile", "env02", PROFILE)]
    )
    assert [p.name for p in places] == ["/homes/env01", "/homes/env01/profile"]


def test_a_home_that_does_not_show_its_owners_own_token_is_blind() -> None:
    readings = [reading(HOME1, "", "a"), reading(HOME2, TOK2, "b")]
    proven = prove(readings, {HOME1.name: [TOK1], HOME2.name: [TOK2]})
    assert proven[0].error is not None and TOK1 in proven[0].error
    assert proven[1].error is None
    rows = sweep_rows(0, 1, proven, ["env01", "env02"])
    assert by_pair(rows) == {("env02", "env01"): {"lost"}, ("env01", "env02"): {"clean"}}


def test_a_foreign_token_counts_from_its_own_rollouts_start_never_before_the_window() -> None:
    rows = sweep_rows(
        0, 2, [reading(HOME2, f"{TOK1} {TOK2}", "x")], ["env01", "env02"]
    )  # env01's token of window 1 in env02's home, found in window 2
    tokens = swept_tokens(rows)
    assert tokens == [parse(TOK1)]
    # Its rollout started before window 2 opened: every rollout of window 2 is at stake.
    assert arrival_bound(tokens, 200.0, {"env01-w001-r0003": 50.0}, {1: 10.0}) == 200.0
    # A token whose rollout started inside the window spares the rollouts that ended before.
    assert arrival_bound(tokens, 200.0, {"env01-w001-r0003": 260.0}, {}) == 260.0
    # A trial's token (no rollout recorded) counts from its window's start.
    assert arrival_bound(tokens, 5.0, {}, {1: 40.0}) == 40.0
    # An unknown token counts from the window's start.
    assert arrival_bound([None], 200.0, {}, {}) == 200.0
