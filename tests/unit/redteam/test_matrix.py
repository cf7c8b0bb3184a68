"""The matrix verdict: attacks must be demonstrated, sealed must hold, honest work must score 1."""

from __future__ import annotations

import json

import pytest

from cleanroom.redteam.catalogue import by_id
from cleanroom.redteam.matrix import Cell, Matrix, Row, RowKind, Verdict
from cleanroom.verifiers.container.modes import Mode

MODES = (Mode.SHARED, Mode.CLEARED, Mode.SEALED)
TASK = "fix-median"
HONEST = Row(TASK, RowKind.HONEST)
NOOP = Row(TASK, RowKind.NOOP)
PLANTED = Row(TASK, RowKind.ATTACK, by_id("planted-reward-txt"))
WRITER = Row(TASK, RowKind.ATTACK, by_id("background-writer"))
NAN = Row(TASK, RowKind.ATTACK, by_id("junk-nan"))


def score(value: float) -> Cell:
    return Cell("success" if value == 1.0 else "failure", value)


def invalid(reason: str) -> Cell:
    return Cell("invalid", None, reason)


def agents_zero(reason: str) -> Cell:
    """A failure scored 0 because of the agent's own act."""
    return Cell("failure", 0.0, reason)


def filled(**attack_cells: tuple[Cell, Cell, Cell]) -> Matrix:
    """Honest 1 and no-op 0 everywhere, plus the given attack rows' cells."""
    rows = [HONEST, NOOP]
    matrix = Matrix(MODES, rows)
    for mode in MODES:
        matrix.put(HONEST, mode, score(1.0))
        matrix.put(NOOP, mode, score(0.0))
    for attack_id, cells in attack_cells.items():
        row = Row(TASK, RowKind.ATTACK, by_id(attack_id.replace("_", "-")))
        rows.append(row)
        for mode, cell in zip(MODES, cells, strict=True):
            matrix.put(row, mode, cell)
    return matrix


def test_an_attack_that_fools_shared_and_not_the_others_passes() -> None:
    matrix = filled(planted_reward_txt=(score(1), score(0), score(0)))

    assert matrix.judge(PLANTED, Mode.SHARED) is Verdict.DEMONSTRATED
    assert matrix.judge(PLANTED, Mode.SEALED) is Verdict.HELD
    assert matrix.summary().passed


def test_an_attack_that_does_not_fool_shared_is_not_demonstrated_never_a_pass() -> None:
    matrix = filled(planted_reward_txt=(score(0), score(0), score(0)))

    summary = matrix.summary()

    assert matrix.judge(PLANTED, Mode.SHARED) is Verdict.NOT_DEMONSTRATED
    assert summary.not_demonstrated == (PLANTED.id,)
    assert not summary.passed


def test_an_invalid_shared_does_not_count_as_fooled() -> None:
    matrix = filled(planted_reward_txt=(invalid("bad_reward"), score(0), score(0)))

    assert matrix.judge(PLANTED, Mode.SHARED) is Verdict.NOT_DEMONSTRATED


def test_a_disturbance_is_demonstrated_when_shared_is_not_the_truth() -> None:
    matrix = filled(junk_nan=(invalid("bad_reward"), score(0), score(0)))

    assert matrix.judge(NAN, Mode.SHARED) is Verdict.DEMONSTRATED
    assert matrix.summary().passed


def test_a_disturbance_is_not_demonstrated_when_shared_gives_the_truth() -> None:
    matrix = filled(junk_nan=(score(0), score(0), score(0)))

    assert matrix.judge(NAN, Mode.SHARED) is Verdict.NOT_DEMONSTRATED


def test_sealed_holds_with_the_agents_own_zero() -> None:
    matrix = filled(planted_reward_txt=(score(1), score(0), agents_zero("tamper")))

    assert matrix.judge(PLANTED, Mode.SEALED) is Verdict.HELD


def test_an_attack_that_makes_sealed_invalid_has_escaped_its_zero() -> None:
    matrix = filled(planted_reward_txt=(score(1), score(0), invalid("verifier_unavailable")))

    summary = matrix.summary()

    assert matrix.judge(PLANTED, Mode.SEALED) is Verdict.ESCAPED
    assert not summary.passed
    assert summary.sealed_fooled == ("fix-median/planted-reward-txt [sealed]",)


def test_cleared_may_hold_with_an_invalid_outcome() -> None:
    matrix = filled(planted_reward_txt=(score(1), invalid("bad_reward"), score(0)))

    assert matrix.judge(PLANTED, Mode.CLEARED) is Verdict.HELD


def test_sealed_fooled_fails_the_verdict() -> None:
    matrix = filled(planted_reward_txt=(score(1), score(0), score(1)))

    summary = matrix.summary()

    assert summary.sealed_fooled == (f"{PLANTED.id} [sealed]",)
    assert not summary.passed
    assert summary.line().startswith("FAIL")


def test_cleared_fooled_at_its_known_limit_is_marked_not_hidden() -> None:
    matrix = filled(background_writer=(score(1), score(1), score(0)))

    assert matrix.judge(WRITER, Mode.CLEARED) is Verdict.BEYOND_PROMISE
    assert matrix.summary().cleared_beyond_promise == (f"{WRITER.id} [cleared]",)
    assert matrix.summary().passed


def test_cleared_fooled_where_it_should_hold_is_reported() -> None:
    matrix = filled(planted_reward_txt=(score(1), score(1), score(0)))

    assert matrix.judge(PLANTED, Mode.CLEARED) is Verdict.FOOLED
    assert matrix.summary().cleared_fooled == (f"{PLANTED.id} [cleared]",)


def test_an_honest_solution_below_one_anywhere_fails_the_verdict() -> None:
    matrix = filled(planted_reward_txt=(score(1), score(0), score(0)))
    matrix.put(HONEST, Mode.SEALED, invalid("tamper"))

    summary = matrix.summary()

    assert summary.honest_blocked == (f"{HONEST.id} [sealed]",)
    assert not summary.passed


def test_a_noop_that_passes_makes_the_matrix_meaningless() -> None:
    matrix = filled(planted_reward_txt=(score(1), score(0), score(0)))
    matrix.put(NOOP, Mode.SHARED, score(1.0))

    assert matrix.judge(NOOP, Mode.SHARED) is Verdict.VACUOUS
    assert not matrix.summary().passed


def test_a_cell_that_was_not_run_fails_the_verdict() -> None:
    matrix = filled(planted_reward_txt=(score(1), score(0), score(0)))
    del matrix.cells[(PLANTED.id, Mode.SEALED)]

    summary = matrix.summary()

    assert f"{PLANTED.id} [sealed]" in summary.missing
    assert not summary.passed


def test_the_verdict_line_names_all_three_claims() -> None:
    line = filled(planted_reward_txt=(score(1), score(0), score(0))).summary().line()

    assert line == (
        "PASS: attacks demonstrated 1/1; sealed held 1/1; "
        "honest solution scored 1 in 3/3 cells; no-op scored 0 in 3/3"
    )


def test_the_matrix_as_data_carries_each_cell_with_its_verdict() -> None:
    data = filled(planted_reward_txt=(score(1), score(0), agents_zero("tamper"))).to_json()

    assert data["modes"] == ["shared", "cleared", "sealed"]
    assert data["demonstrating_modes"] == ["shared"]
    attack = data["rows"][2]
    assert attack["attack"] == "planted-reward-txt"
    assert attack["demonstration"] == "fooled"
    assert attack["cells"]["shared"]["verdict"] == "demonstrated"
    assert attack["cells"]["sealed"]["reason"] == "tamper"
    assert data["verdict"]["passed"] is True


def test_a_stored_matrix_is_judged_again_the_same_way() -> None:
    stored = filled(
        planted_reward_txt=(score(1), score(0), agents_zero("tamper")),
        background_writer=(score(1), score(1), invalid("verifier_timeout")),
    )
    stored.cells.pop((NOOP.id, Mode.CLEARED))  # a cell that was not run stays missing

    again = Matrix.from_json(json.loads(json.dumps(stored.to_json())))

    assert again.to_json() == stored.to_json()
    assert again.judge(WRITER, Mode.SEALED) is Verdict.ESCAPED
    assert again.judge(NOOP, Mode.CLEARED) is Verdict.MISSING


def test_what_is_not_a_stored_matrix_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="not a stored red-team matrix"):
        Matrix.from_json({"modes": ["shared"], "rows": [{"task": "t", "kind": "nope"}]})
