"""Every detector fires on a deliberate leak and stays quiet on the clean case."""

from __future__ import annotations

from dataclasses import dataclass, replace

from cleanroom.core.detectors import (
    BLIND,
    Bystander,
    Delivery,
    ScreenSample,
    below_line_digest,
    blast_radius_rows,
    clipboard_cross_reads,
    colour_counts,
    delivery_rows,
    foreign_letter_runs,
    leftover_rows,
    observation_rows,
    parse_rgb,
    placement_rows,
    stale_generation_row,
)
from cleanroom.core.isolation import RowResult
from cleanroom.core.tokens import scan_text

A_LETTERS, B_LETTERS = "abcdefghijklm", "nopqrstuvwxyz"


def test_foreign_letter_runs_fire_on_interleaved_typing() -> None:
    leaked = "abcabcnopabcqrsabc"  # two runs of B's letters inside A's document
    assert foreign_letter_runs(leaked, B_LETTERS) == 2


def test_foreign_letter_runs_stay_quiet_on_a_clean_document() -> None:
    assert foreign_letter_runs("abcdefabcdef\n", B_LETTERS) == 0


def test_clipboard_cross_reads_fire_when_a_read_returns_the_other_side() -> None:
    reads = ["mine-1", "theirs-1", "mine-1", None]
    assert clipboard_cross_reads(reads, own="mine-1", others=["mine-1", "theirs-1"]) == (1, 1)


def test_clipboard_cross_reads_stay_quiet_when_every_read_is_ours() -> None:
    assert clipboard_cross_reads(["mine"] * 5, "mine", ["theirs"]) == (0, 0)


TOK1, TOK2, TOK3 = (
    "env01-w001-r0001-11111111",
    "env02-w001-r0002-22222222",
    "env03-w001-r0003-33333333",
)


def _deliveries(observed: dict[str, str | None]) -> list[Delivery]:
    expected = {"env01": TOK1, "env02": TOK2, "env03": TOK3}
    return [Delivery(env, expected[env], observed[env]) for env in expected]


def _hits(observed: dict[str, str | None]) -> dict[str, list]:
    return {env: scan_text(text or "") for env, text in observed.items()}


def test_delivery_rows_fire_when_one_environment_holds_anothers_token() -> None:
    observed: dict[str, str | None] = {
        "env01": TOK1,
        "env02": TOK2 + " " + TOK3,
        "env03": TOK3,
    }
    rows = delivery_rows("keyboard_storm", 0, 1, _deliveries(observed), _hits(observed))
    cross = [(r.from_env, r.to_env) for r in rows if r.result is RowResult.CROSS]
    assert cross == [("env03", "env02")]
    assert len(rows) == 6  # every ordered pair checked once


def test_delivery_rows_are_all_clean_when_everyone_holds_only_their_own() -> None:
    observed: dict[str, str | None] = {"env01": TOK1, "env02": TOK2, "env03": TOK3}
    rows = delivery_rows("clipboard", 4, 1, _deliveries(observed), _hits(observed))
    assert {r.result for r in rows} == {RowResult.CLEAN}


def test_an_empty_readback_is_blind_so_its_rows_are_lost_not_clean() -> None:
    # A saved document that came back empty saw nothing, its own typing included.
    observed: dict[str, str | None] = {"env01": TOK1, "env02": "", "env03": TOK3}
    rows = delivery_rows("keyboard_storm", 0, 1, _deliveries(observed), _hits(observed))
    into_env02 = {r.result for r in rows if r.to_env == "env02"}
    assert into_env02 == {RowResult.LOST}
    assert all(r.detail == BLIND for r in rows if r.to_env == "env02")


def test_a_blind_readback_that_holds_a_foreign_token_is_still_cross() -> None:
    observed: dict[str, str | None] = {"env01": TOK1, "env02": TOK3, "env03": TOK3}
    rows = delivery_rows("clipboard", 0, 1, _deliveries(observed), _hits(observed))
    results = {(r.from_env, r.to_env): r.result for r in rows}
    assert results["env03", "env02"] is RowResult.CROSS
    assert results["env01", "env02"] is RowResult.LOST


def test_delivery_rows_are_lost_when_a_readback_failed() -> None:
    observed: dict[str, str | None] = {"env01": TOK1, "env02": None, "env03": TOK3}
    rows = delivery_rows("clipboard", 0, 1, _deliveries(observed), _hits(observed))
    lost = [(r.from_env, r.to_env) for r in rows if r.result is RowResult.LOST]
    assert lost == [("env01", "env02"), ("env03", "env02")]


def test_a_token_from_outside_the_trial_is_still_reported() -> None:
    stray = "env07-w001-r0009-77777777"
    observed: dict[str, str | None] = {"env01": TOK1 + " " + stray, "env02": TOK2, "env03": TOK3}
    rows = delivery_rows("clipboard", 0, 1, _deliveries(observed), _hits(observed))
    assert [(r.from_env, r.to_env) for r in rows if r.result is RowResult.CROSS] == [
        ("env07", "env01")
    ]


def test_placement_rows_fire_on_a_token_found_in_another_home() -> None:
    hits = scan_text(f"prefs: last_file={TOK2}\n", "/home/cr-env01/.config/x")
    rows = placement_rows("files_and_prefs", 0, 1, "env01", hits, senders=["env02", "env03"])
    assert [(r.from_env, r.result) for r in rows] == [
        ("env02", RowResult.CROSS),
        ("env03", RowResult.CLEAN),
    ]


def test_placement_rows_ignore_the_owners_own_tokens() -> None:
    rows = placement_rows("files_and_prefs", 0, 1, "env01", scan_text(TOK1), senders=["env02"])
    assert [(r.from_env, r.result) for r in rows] == [("env02", RowResult.CLEAN)]


# -- observation privacy -----------------------------------------------------------------

PINK, BLUE = parse_rgb("d81b60"), parse_rgb("1e88e5")


def _screen(width: int, height: int, fill: tuple[int, int, int]) -> bytes:
    return bytes(fill) * (width * height)


def test_colour_counts_count_exact_pixels_only() -> None:
    rgb = _screen(10, 10, PINK)[: 3 * 60] + _screen(10, 4, (0xD8, 0x1B, 0x61))
    assert colour_counts(rgb, 10, 10, [PINK, BLUE]) == {PINK: 60, BLUE: 0}


def test_the_digest_below_the_line_ignores_the_strip_above_it() -> None:
    base = _screen(4, 4, PINK)
    strip_changed = _screen(4, 1, BLUE) + base[12:]
    body_changed = base[:24] + _screen(4, 2, BLUE)
    assert below_line_digest(strip_changed, 4, 1) == below_line_digest(base, 4, 1)
    assert below_line_digest(body_changed, 4, 1) != below_line_digest(base, 4, 1)


def _obs(env: str, at: float, digest: str, **colours: int) -> ScreenSample:
    return ScreenSample(env, at, digest, dict(colours))


def _observe(samples: list[ScreenSample]) -> dict[tuple[str, str], str]:
    rows = observation_rows(
        "observation_privacy", 0, 1, samples, actors=["env01"], idle=["env02"],
        observed=["env00", "env01", "env02"], min_pixels=100,
    )  # fmt: skip
    return {(r.from_env, r.to_env): r.result.value for r in rows}


CLEAN_SCREENS = [
    _obs("env00", 0, "w"), _obs("env01", 0, "a", env01=900), _obs("env02", 0, "b", env02=900),
    _obs("env00", 1, "w2"), _obs("env01", 1, "a2", env01=900), _obs("env02", 1, "b", env02=900),
]  # fmt: skip


def test_observation_rows_stay_clean_when_idle_screens_hold_still_and_colours_stay_home() -> None:
    assert set(_observe(CLEAN_SCREENS).values()) == {"clean"}


def test_observation_rows_fire_on_a_foreign_page_colour() -> None:
    leaked = [*CLEAN_SCREENS, _obs("env01", 2, "a3", env01=500, env02=400)]
    got = _observe(leaked)
    assert got[("env02", "env01")] == "cross"
    assert got[("env01", "env02")] == "clean"


def test_observation_rows_fire_when_an_idle_screen_changes_below_the_line() -> None:
    got = _observe([*CLEAN_SCREENS, _obs("env02", 2, "typed-into", env02=900)])
    assert got[("env01", "env02")] == "cross"
    assert got[("env02", "env01")] == "clean"


def test_observation_rows_are_lost_when_a_screen_was_never_read_or_showed_no_page() -> None:
    unread = [s for s in CLEAN_SCREENS if s.env != "env02"] + [ScreenSample("env02", 0, None)]
    assert _observe(unread)[("env01", "env02")] == "lost"
    no_page = [s for s in CLEAN_SCREENS if s.env != "env01"] + [_obs("env01", 0, "a")]
    assert _observe(no_page)[("env02", "env01")] == "lost"


def test_an_idle_screen_is_lost_when_no_actors_screen_ever_changed() -> None:
    # The blind case: the actor's own typing never showed, so a leaked change would not.
    still = [s if s.env != "env01" else replace(s, below_line="a") for s in CLEAN_SCREENS]
    got = _observe(still)
    assert got[("env01", "env02")] == "lost"
    assert got[("env02", "env01")] == "clean"  # the actor's own screen showed its own page


# -- generations: stale actions, leftovers of a reset --------------------------------------


@dataclass(frozen=True)
class _Logged:
    at: float
    env: str
    generation: int
    kind: str
    outcome: str


def _stale_row(records: list[_Logged], refused: int = 5) -> tuple[str, str, str]:
    row = stale_generation_row(
        "stale_generation", 0, 1, "env01", fired=5, refused=refused, records=records,
        generation=3, kind="click", left_at=100.0,
    )  # fmt: skip
    return row.from_env, row.to_env, row.result.value


def test_stale_generation_row_is_clean_when_every_stale_click_was_refused() -> None:
    refused = [_Logged(100.0 + i, "env01", 3, "click", "refused-stale") for i in range(5)]
    # A click of generation 3 applied before the generation was left is no fault.
    earlier = _Logged(99.0, "env01", 3, "click", "applied")
    assert _stale_row([earlier, *refused]) == ("env01", "env01", "clean")


def test_stale_generation_row_fires_on_a_stale_click_the_log_shows_applied() -> None:
    log = [_Logged(100.0 + i, "env01", 3, "click", "refused-stale") for i in range(4)]
    log.append(_Logged(104.5, "env01", 3, "click", "applied"))
    assert _stale_row(log) == ("env01", "env01", "cross")


def test_stale_generation_row_fires_when_a_caller_was_not_refused() -> None:
    log = [_Logged(100.0 + i, "env01", 3, "click", "refused-stale") for i in range(5)]
    assert _stale_row(log, refused=4)[2] == "cross"


def test_stale_generation_row_is_lost_when_the_log_misses_a_click() -> None:
    log = [_Logged(100.0 + i, "env01", 3, "click", "refused-stale") for i in range(4)]
    assert _stale_row(log)[2] == "lost"


def test_leftover_rows_fire_on_a_token_that_survived_the_reset_or_reached_another_env() -> None:
    hits = {
        "env01": scan_text(f"notes {TOK1}", "/home/env01/notes.odt"),
        "env02": scan_text(f"clip {TOK1}", "env02:CLIPBOARD"),
        "env03": scan_text(TOK3, "/home/env03/x"),
    }
    rows = leftover_rows("reset_during_write", 0, 1, "env01", [TOK1], hits)
    got = {(r.from_env, r.to_env): r for r in rows}
    assert got[("env01", "env01")].result is RowResult.CROSS
    assert "new generation" in got[("env01", "env01")].detail
    assert got[("env01", "env02")].result is RowResult.CROSS
    assert got[("env01", "env03")].result is RowResult.CLEAN


def test_leftover_rows_are_clean_after_a_clean_reset_and_lost_where_unreadable() -> None:
    why = "/home/env03/.cache: Permission denied"
    hits = {"env01": [], "env02": scan_text(TOK2), "env03": why}
    rows = leftover_rows("reset_during_write", 0, 1, "env01", [TOK1], hits)
    assert [(r.to_env, r.result.value) for r in rows] == [
        ("env01", "clean"),
        ("env02", "clean"),
        ("env03", "lost"),
    ]
    assert why in rows[2].detail


# -- crash blast radius --------------------------------------------------------------------


def _bystander(**changes: object) -> Bystander:
    fields: dict[str, object] = {
        "env": "env02", "pids_before": (10, 11), "pids_after": (10, 11), "dead_after": (),
        "generation_before": 0, "generation_after": 0, "latencies_ms": (80.0, 120.0),
    }  # fmt: skip
    fields.update(changes)
    return Bystander(**fields)  # type: ignore[arg-type]


def _blast(b: Bystander, came_back: bool = True) -> str:
    rows = blast_radius_rows("crash_blast_radius", 0, 1, "env01", [b], 5000.0, came_back, "why")
    return rows[0].result.value


def test_blast_radius_rows_are_clean_when_the_bystander_was_untouched() -> None:
    assert _blast(_bystander()) == "clean"


def test_blast_radius_rows_fire_when_a_bystander_died_moved_on_or_slowed_down() -> None:
    assert _blast(_bystander(pids_after=(10, 12))) == "cross"
    assert _blast(_bystander(dead_after=("writer (pid 11) is dead",))) == "cross"
    assert _blast(_bystander(generation_after=1)) == "cross"
    assert _blast(_bystander(latencies_ms=(80.0, 6000.0))) == "cross"
    assert _blast(_bystander(failed_screenshots=2)) == "cross"


def test_blast_radius_rows_are_lost_when_the_target_never_came_back() -> None:
    assert _blast(_bystander(), came_back=False) == "lost"
    assert _blast(_bystander(latencies_ms=())) == "lost"
    # Harm seen before the deadline is still reported as harm.
    assert _blast(_bystander(generation_after=2), came_back=False) == "cross"
