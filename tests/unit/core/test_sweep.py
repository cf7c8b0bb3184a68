"""The token sweep's attribution: a token in a place of an environment it does not name."""

from __future__ import annotations

import pytest

from cleanroom.core.isolation import SWEEP_TEST, RowResult, judge_window
from cleanroom.core.outcomes import Reason
from cleanroom.core.sweep import (
    ACT_REASONS,
    CLIPBOARD,
    HOME,
    PROFILE,
    SUBMISSION,
    ActKind,
    OwnAct,
    Place,
    Reading,
    RolloutSpan,
    UnreadSpot,
    arrival_bound,
    judge_sweep,
    merge_places,
    prove,
    writing_rollouts,
)
from cleanroom.core.token_forms import Bound
from cleanroom.core.tokens import TokenHit, parse, scan_text

ENVS = ["env00", "env01", "env02"]
TOK1 = "env01-w001-r0003-0a0b0c0d"
TOK2 = "env02-w001-r0004-1a1b1c1d"
MINTED = {TOK1, TOK2}
HOME1 = Place("/pools/p/homes/env01", ("env01",), HOME)
HOME2 = Place("/pools/p/homes/env02", ("env02",), HOME)


def sweep_rows(trial: int, window: int, readings: list[Reading], envs: list[str]) -> list:
    """The rows of a sweep in a run that minted TOK1 and TOK2."""
    return judge_sweep(trial, window, readings, envs, MINTED).rows


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
    judged = judge_sweep(
        0, 2, [reading(HOME2, f"{TOK1} {TOK2}", "x")], ["env01", "env02"], MINTED
    )  # env01's token of window 1 in env02's home, found in window 2
    tokens = [f.token for f in judged.findings]
    assert tokens == [parse(TOK1)]
    # Its rollout started before window 2 opened: every rollout of window 2 is at stake.
    assert arrival_bound(tokens, 200.0, {"env01-w001-r0003": 50.0}, {1: 10.0}) == 200.0
    # A token whose rollout started inside the window spares the rollouts that ended before.
    assert arrival_bound(tokens, 200.0, {"env01-w001-r0003": 260.0}, {}) == 260.0
    # A trial's token (no rollout recorded) counts from its window's start.
    assert arrival_bound(tokens, 5.0, {}, {1: 40.0}) == 40.0
    # An unknown token counts from the window's start.
    assert arrival_bound([None], 200.0, {}, {}) == 200.0


# -- what an environment's own programs do to the sweep --------------------------------------

FORGED = "env01-w001-r0003-deadbeef"  # env01's rollout id, a nonce nobody minted
CANARY = Place("env00's clipboard", ("env00",), CLIPBOARD)


def read_all(*readings: Reading) -> list[Reading]:
    """The readings, beside clean ones of every other environment's place."""
    return [reading(CANARY, "", "c"), reading(HOME1, TOK1, "a"), *readings]


def test_a_forged_token_is_its_writers_own_act_and_no_row_of_the_window() -> None:
    spot = f"{HOME2.name}/Documents/forged.txt"
    judged = judge_sweep(0, 1, read_all(reading(HOME2, f"{TOK2} {FORGED}", spot)), ENVS, MINTED)
    assert [r for r in judged.rows if r.result is not RowResult.CLEAN] == []
    assert judged.findings == []
    [act] = judged.own_acts
    assert (act.kind, act.owners, act.where, str(act.token)) == (
        ActKind.FORGED_TOKEN,
        ("env02",),
        spot,
        FORGED,
    )
    assert FORGED in act.evidence and "never minted" in act.evidence
    assert not judge_window(1, judged.rows).failed


def test_a_forged_token_beside_a_real_one_leaves_the_real_one_cross() -> None:
    judged = judge_sweep(0, 1, [reading(HOME2, f"{FORGED} {TOK1}", "x")], ENVS, MINTED)
    assert [(r.from_env, r.to_env) for r in judged.rows if r.result is RowResult.CROSS] == [
        ("env01", "env02")
    ]
    assert [a.kind for a in judged.own_acts] == [ActKind.FORGED_TOKEN]
    assert judge_window(1, judged.rows).failed


def test_a_forged_token_of_an_environment_the_pool_lacks_makes_no_row_from_it() -> None:
    judged = judge_sweep(0, 1, [reading(HOME2, "env77-w001-r0001-00000000", "x")], ENVS, MINTED)
    assert {r.from_env for r in judged.rows} <= set(ENVS)
    assert [a.kind for a in judged.own_acts] == [ActKind.FORGED_TOKEN]


def test_a_real_token_in_another_form_is_cross_and_names_the_form() -> None:
    hit = TokenHit(parse(TOK1), f"{HOME2.name}/a.odt", 40, "zip:content.xml > base64")
    judged = judge_sweep(0, 1, [Reading(HOME2, (hit,))], ENVS, MINTED)
    cross = [r for r in judged.rows if r.result is RowResult.CROSS]
    assert [(r.from_env, r.to_env) for r in cross] == [("env01", "env02")]
    assert "as zip:content.xml > base64" in cross[0].detail
    assert judged.findings[0].form == "zip:content.xml > base64"


def test_a_selection_that_never_answers_is_its_environments_own_act_not_lost() -> None:
    clip = Place("env02's clipboard", ("env02",), CLIPBOARD)
    readings = read_all(reading(HOME2, TOK2, "b"), Reading(clip, unanswered=("CLIPBOARD",)))
    judged = judge_sweep(0, 1, readings, ENVS, MINTED)
    assert {r.result for r in judged.rows} == {RowResult.CLEAN}
    assert [(a.kind, a.owners) for a in judged.own_acts] == [
        (ActKind.SELECTION_UNANSWERED, ("env02",))
    ]
    assert not judge_window(1, judged.rows).failed


def test_a_display_its_own_client_held_is_its_environments_own_act_not_lost() -> None:
    clip = Place("env02's clipboard", ("env02",), CLIPBOARD)
    readings = read_all(reading(HOME2, TOK2, "b"), Reading(clip, held=("CLIPBOARD",)))
    judged = judge_sweep(0, 1, readings, ENVS, MINTED)
    assert {r.result for r in judged.rows} == {RowResult.CLEAN}
    assert [(a.kind, a.owners) for a in judged.own_acts] == [(ActKind.DISPLAY_HELD, ("env02",))]
    assert ACT_REASONS[judged.own_acts[0].kind] is Reason.DISPLAY_HELD
    assert not judge_window(1, judged.rows).failed


def test_a_held_display_of_the_canarys_is_lost() -> None:
    readings = [Reading(CANARY, held=("CLIPBOARD",)), reading(HOME1, TOK1, "a")]
    judged = judge_sweep(0, 1, readings, ["env00", "env01"], MINTED)
    assert judged.own_acts == []
    assert ("env01", "env00", RowResult.LOST) in {
        (r.from_env, r.to_env, r.result) for r in judged.rows
    }


def test_what_a_bound_left_unread_is_reported_with_its_place_not_lost() -> None:
    spot = UnreadSpot(f"{HOME2.name}/bomb.zip (zip:zeros)", Bound.FILE_BYTES, "64 MiB")
    judged = judge_sweep(0, 1, [Reading(HOME2, unread=(spot,))], ["env02"], MINTED)
    assert judged.unread == [(HOME2, spot)]
    assert not [r for r in judged.rows if r.result is RowResult.LOST]


def test_every_kind_of_own_act_scores_with_an_agents_reason() -> None:
    assert set(ACT_REASONS) == set(ActKind)
    assert {r.cause.value for r in ACT_REASONS.values()} == {"agent"}
    assert ACT_REASONS[ActKind.FORGED_TOKEN] is Reason.FORGED_TOKEN


# -- who wrote it ------------------------------------------------------------------------------

SPANS = [
    RolloutSpan("env02-w001-r0001", "env02", 10.0, 20.0),  # its reset wiped at 11
    RolloutSpan("env02-w001-r0002", "env02", 21.0, 30.0),  # its reset wiped at 22
    RolloutSpan("env02-w001-r0003", "env02", 31.0, None),  # started; its reset is next
    RolloutSpan("env01-w001-r0004", "env01", 21.0, 30.0),
]


def _forged(place: Place = HOME2) -> OwnAct:
    return OwnAct(ActKind.FORGED_TOKEN, place, "x", FORGED, parse(FORGED))


def test_the_writer_is_the_rollout_under_way_at_its_environments_last_wipe() -> None:
    # Swept before r0003's reset: the last wipe (22) was r0002's, which then acted.
    assert writing_rollouts(_forged(), SPANS, 22.0) == ["env02-w001-r0002"]


def test_a_rollout_whose_own_reset_is_yet_to_come_wrote_nothing() -> None:
    assert "env02-w001-r0003" not in writing_rollouts(_forged(), SPANS, 22.0)


def test_a_recovery_mid_rollout_names_the_rollout_it_recovered() -> None:
    # r0003's reset wiped at 32; a recovery at 40 sweeps first: r0003 is still under way.
    assert writing_rollouts(_forged(), SPANS, 32.0) == ["env02-w001-r0003"]


def test_no_wipe_in_the_window_or_a_shared_place_names_no_one() -> None:
    shared = Place("/homes/env01", ("env01", "env02"), HOME)
    assert writing_rollouts(_forged(), SPANS, None) == []
    assert writing_rollouts(_forged(shared), SPANS, 22.0) == []


def test_a_submission_names_its_leases_rollout() -> None:
    sub = Place("verify server submission 3", ("env02",), SUBMISSION, writer="env02-w001-r0001")
    assert writing_rollouts(_forged(sub), SPANS, None) == ["env02-w001-r0001"]


@pytest.mark.parametrize("text", [TOK1.upper(), "x" + TOK1, TOK1 + "7"])
def test_a_real_tokens_other_spellings_are_the_real_token(text: str) -> None:
    from cleanroom.core.token_forms import find_forms

    hits = [
        TokenHit(h.token, "x", h.outer_offset, h.form)
        for h in find_forms(text.encode(), 1 << 20).hits
    ]
    judged = judge_sweep(0, 1, [Reading(HOME2, tuple(hits))], ENVS, MINTED)
    assert [f.token for f in judged.findings] == [parse(TOK1)] and judged.own_acts == []


def test_in_the_canarys_places_a_forged_token_is_cross_and_a_silent_selection_lost() -> None:
    # env00 never acts: nothing of its own wrote there.
    canary_home = Place("/pools/p/homes/env00", ("env00",), HOME)
    readings = [
        reading(canary_home, FORGED, "/pools/p/homes/env00/x"),
        Reading(CANARY, unanswered=("PRIMARY",)),
        reading(HOME1, TOK1, "a"),
        reading(HOME2, TOK2, "b"),
    ]
    judged = judge_sweep(0, 1, readings, ENVS, MINTED)
    assert judged.own_acts == []
    assert {(r.from_env, r.to_env, r.result) for r in judged.rows if r.to_env == "env00"} >= {
        ("env01", "env00", RowResult.CROSS),
        ("env02", "env00", RowResult.LOST),
    }
    assert judge_window(1, judged.rows).failed
