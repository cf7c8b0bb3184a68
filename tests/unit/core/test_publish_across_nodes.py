"""The merged number of a run across nodes: printed only next to every node's fired
control, counting only checks proven on every node that contributes rows of them; a
blind node is refused by name, and a node lost mid-window fails the window."""

from __future__ import annotations

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.publish import (
    ControlResult,
    NodeEvidence,
    Publication,
    Refusal,
    publish_across_nodes,
)

FIRED = ControlResult(3, 3, 4, 20)
BLIND = ControlResult(0, 3, 0, 20)


def _rows(test: str = "clipboard", result: RowResult = RowResult.CLEAN) -> list[IsolationRow]:
    return [IsolationRow(test, t, "env01", "env02", result, 1) for t in range(4)]


def _node(
    name: str,
    *,
    controls: list[ControlResult] | None = None,
    rows: list[IsolationRow] | None = None,
    proven: dict[str, list[str]] | None = None,
    hours: float = 0.5,
    status: str = "finished",
    unfinished: dict[int, str] | None = None,
) -> NodeEvidence:
    return NodeEvidence(
        name,
        status,
        _rows() if rows is None else rows,
        hours,
        [FIRED] if controls is None else controls,
        unfinished or {},
        {"clipboard": ["shared display"]} if proven is None else proven,
    )


def test_every_nodes_control_fired_and_every_check_proven_publishes_the_merged_number() -> None:
    verdict = publish_across_nodes([_node("a"), _node("b", hours=0.25)])
    assert isinstance(verdict, Publication), verdict
    assert verdict.events == 0 and verdict.env_hours == 0.75
    assert verdict.control.typing_trials == 6 and verdict.control.clipboard_cross == 8
    assert "on 2 node(s), each node's positive control fired" in verdict.text
    assert verdict.proven["clipboard"] == ["shared display on a", "shared display on b"]


def test_a_cross_row_on_one_node_is_an_event_of_the_merged_number() -> None:
    b = _node("b", rows=[*_rows(), IsolationRow("clipboard", 9, "env02", "env01", "cross", 1)])
    verdict = publish_across_nodes([_node("a"), b])
    assert isinstance(verdict, Publication), verdict
    assert verdict.events == 1 and "1 contamination event(s)" in verdict.text


def test_a_node_whose_control_did_not_fire_is_refused_by_name_and_its_hours_not_counted() -> None:
    verdict = publish_across_nodes([_node("a"), _node("b", controls=[FIRED, BLIND], hours=0.4)])
    assert isinstance(verdict, Refusal)
    assert "b (its positive control did not fire: typing 0 of 3" in verdict.reason
    assert "0.40 environment-hours of b are not counted" in verdict.reason
    assert "a (" not in verdict.reason


def test_a_node_whose_control_never_ran_is_refused_by_name() -> None:
    verdict = publish_across_nodes([_node("a"), _node("b", controls=[], status="failed")])
    assert isinstance(verdict, Refusal) and "b (its positive control has not run)" in verdict.reason


def test_a_check_unproven_on_a_node_that_contributes_its_rows_refuses() -> None:
    verdict = publish_across_nodes([_node("a"), _node("b", proven={})])
    assert isinstance(verdict, Refusal)
    assert "clipboard on b" in verdict.reason


def test_a_check_need_not_be_proven_on_a_node_that_has_no_rows_of_it() -> None:
    a = _node("a", rows=_rows() + _rows("token_sweep"),
              proven={"clipboard": ["x"], "token_sweep": ["planted"]})  # fmt: skip
    verdict = publish_across_nodes([a, _node("b")])
    assert isinstance(verdict, Publication), verdict
    assert set(verdict.checks) == {"clipboard", "token_sweep"}


def test_a_node_lost_mid_window_fails_that_window_for_the_merged_number() -> None:
    lost = _node("b", status="lost", rows=_rows() + _rows(result=RowResult.LOST),
                 unfinished={1: "lost"})  # fmt: skip
    verdict = publish_across_nodes([_node("a"), lost])
    assert isinstance(verdict, Refusal) and verdict.failed_windows == [1]
    assert "lost on b" in verdict.reason


def test_no_node_refuses() -> None:
    assert isinstance(publish_across_nodes([]), Refusal)
