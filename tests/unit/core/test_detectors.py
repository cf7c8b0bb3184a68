"""Every detector fires on a deliberate leak and stays quiet on the clean case."""

from __future__ import annotations

from cleanroom.core.detectors import (
    Delivery,
    clipboard_cross_reads,
    delivery_rows,
    foreign_letter_runs,
    placement_rows,
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
