"""Every attack in every mode, on real Docker: each is demonstrated, cleared and sealed hold."""

from __future__ import annotations

import pytest

from cleanroom.redteam.catalogue import ATTACKS, Attack, ClearedExpectation
from cleanroom.redteam.matrix import Matrix, Row, RowKind, Verdict
from cleanroom.redteam.run_matrix import EXAMPLE_TASK_NAMES
from cleanroom.verifiers.container.modes import Mode

# The matrix comes from the demo (see conftest.py): the first test to ask for it waits
# for the whole demo.
pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]


def row_of(attack: Attack) -> Row:
    return Row(attack.target, RowKind.ATTACK, attack)


def explain(matrix: Matrix, row: Row, mode: Mode) -> str:
    cell = matrix.get(row, mode)
    return f"{row.id} [{mode.value}]: {cell}"


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_shared_is_fooled_or_disturbed_so_the_attack_is_real(
    attack: Attack, matrix: Matrix
) -> None:
    row = row_of(attack)

    assert matrix.judge(row, Mode.SHARED) is Verdict.DEMONSTRATED, explain(matrix, row, Mode.SHARED)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_cleared_holds_within_its_promise(attack: Attack, matrix: Matrix) -> None:
    row = row_of(attack)
    verdict = matrix.judge(row, Mode.CLEARED)

    if attack.cleared is ClearedExpectation.HOLDS:
        assert verdict is Verdict.HELD, explain(matrix, row, Mode.CLEARED)
    else:
        assert verdict in (Verdict.HELD, Verdict.BEYOND_PROMISE), explain(matrix, row, Mode.CLEARED)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_sealed_scores_every_attack_zero_and_none_escapes_as_invalid(
    attack: Attack, matrix: Matrix
) -> None:
    row = row_of(attack)

    assert matrix.judge(row, Mode.SEALED) is Verdict.HELD, explain(matrix, row, Mode.SEALED)
    cell = matrix.get(row, Mode.SEALED)
    assert cell is not None and cell.valid and cell.score == 0.0


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("task", EXAMPLE_TASK_NAMES)
def test_the_honest_solution_scores_one(task: str, mode: Mode, matrix: Matrix) -> None:
    row = Row(task, RowKind.HONEST)

    assert matrix.judge(row, mode) is Verdict.HONEST_OK, explain(matrix, row, mode)


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("task", EXAMPLE_TASK_NAMES)
def test_doing_nothing_scores_zero(task: str, mode: Mode, matrix: Matrix) -> None:
    row = Row(task, RowKind.NOOP)

    assert matrix.judge(row, mode) is Verdict.TRUTH, explain(matrix, row, mode)


def test_the_background_writer_fools_cleared_as_documented(matrix: Matrix) -> None:
    row = row_of(next(a for a in ATTACKS if a.id == "background-writer"))

    assert matrix.judge(row, Mode.CLEARED) is Verdict.BEYOND_PROMISE


def test_toolchain_attacks_are_seen_in_sealed_as_tamper_or_unseen_changes(
    matrix: Matrix,
) -> None:
    # workdir-shadow writes only into the work dir: state the verifier sees, so it leaves
    # no trace outside it; what defeats it is Python's search order, not the diff. So do
    # the links resolved in the verifier's view and the metadata and bytecode Python never
    # reads from the state. The scratch links too: they lie in the work dir, and what
    # defeats them is that they are frozen at install.
    in_state = {
        "workdir-shadow",
        "dist-info-plugin",
        "pycache-forgery",
        "scratch-link",
        "scratch-link-folder",
        *RUNNER_ATTACKS,
    }
    trojans = [
        a for a in ATTACKS if a.cleared is ClearedExpectation.NOT_CLAIMED and a.id not in in_state
    ]

    for attack in trojans:
        cell = matrix.get(row_of(attack), Mode.SEALED)
        assert cell is not None, attack.id
        unseen = cell.details.get("unseen_by_verifier", {}).get("count", 0)
        assert cell.reason == "tamper" or unseen > 0, (attack.id, cell)


# The code under test cutting the runner short or writing the reward, and what sealed
# calls each: the runner witness's evidence.
RUNNER_ATTACKS = {
    "exit-at-import": ("runner_cut_short", "never finished"),
    "exit-in-handler": ("runner_cut_short", "normal end"),
    "pytest-exit-in-code": ("runner_cut_short", "pytest's exit"),
    "skip-in-code": ("runner_cut_short", "raised a skip"),
    "reward-from-code": ("tamper", "touched /logs/verifier/reward.txt (open from /app/stats.py)"),
    "witness-deep-line": ("runner_cut_short", "a line nested over"),
}


@pytest.mark.parametrize("attack_id", sorted(RUNNER_ATTACKS))
def test_the_code_under_test_cutting_the_runner_short_is_seen_by_the_witness_in_sealed(
    matrix: Matrix, attack_id: str
) -> None:
    cell = matrix.get(row_of(next(a for a in ATTACKS if a.id == attack_id)), Mode.SEALED)
    reason, evidence = RUNNER_ATTACKS[attack_id]

    assert cell is not None
    assert cell.reason == reason, cell
    shown = cell.detail if reason == "runner_cut_short" else " ".join(cell.details["tamper"])
    assert evidence in shown, shown


@pytest.mark.parametrize(
    "attack_id",
    ["artifact-link", "artifact-link-chain", "workdir-link-answer", "workdir-link-folder"],
)
def test_a_link_into_the_tests_is_tamper_in_sealed_naming_where_it_resolved(
    matrix: Matrix, attack_id: str
) -> None:
    cell = matrix.get(row_of(next(a for a in ATTACKS if a.id == attack_id)), Mode.SEALED)

    assert cell is not None
    assert cell.reason == "tamper", cell
    links = [line for line in cell.details["tamper"] if line.startswith("link ")]
    assert links and all("/tests" in line for line in links), cell


# The agent's acts that used to turn its 0 into an exclusion, and the reason of the 0
# each gets under sealed instead: a planted reward the links were to hide is still
# caught, and tests that overrun are the agent's when a control fits the limit.
AGENTS_ZERO_NOT_EXCLUSION = {
    "unstatable-link": "tamper",
    "link-flood": "tamper",
    "witness-deep-line": "runner_cut_short",
    "idle-on-waiting-tests": "broke_verifier",
    "fifo-slow-check": "broke_verifier",
}


@pytest.mark.parametrize("attack_id", sorted(AGENTS_ZERO_NOT_EXCLUSION))
def test_an_act_that_would_exclude_the_rollout_is_the_agents_zero_under_sealed(
    matrix: Matrix, attack_id: str
) -> None:
    cell = matrix.get(row_of(next(a for a in ATTACKS if a.id == attack_id)), Mode.SEALED)

    assert cell is not None
    assert (cell.status, cell.score, cell.reason) == (
        "failure",
        0.0,
        AGENTS_ZERO_NOT_EXCLUSION[attack_id],
    ), cell
    assert cell.details["timings"]["verify_s"] < 60  # Harbor's default verifier budget


def test_the_verdict_passes(matrix: Matrix) -> None:
    summary = matrix.summary()

    assert summary.passed, summary.to_json()
