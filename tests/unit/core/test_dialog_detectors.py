"""The dialog_steal detectors: where the opener's Save As appeared, and whether the
typist's typing reached the opener. Each fires on a deliberate leak and stays quiet on
the isolated case."""

from __future__ import annotations

from cleanroom.core.detectors import DialogSighting, dialog_rows, dialog_typing_row
from cleanroom.core.isolation import RowResult

TOKEN = "env02-w001-r50001-62b68940"
TYPED = f"dialog {TOKEN}"


def _rows(sightings: list[DialogSighting]) -> dict[tuple[str, str], RowResult]:
    rows = dialog_rows("dialog_steal", 0, 1, "env01", ["env01", "env02"], sightings)
    return {(r.from_env, r.to_env): r.result for r in rows}


def test_a_dialog_in_the_openers_own_program_and_view_is_clean() -> None:
    own = [DialogSighting("env01", "display", "env01"), DialogSighting("env01", "atspi", "env01")]
    assert _rows(own) == {("env01", "env02"): RowResult.CLEAN}


def test_a_dialog_opened_in_another_environments_program_is_cross_to_it() -> None:
    # Shared display: env01's Ctrl+Shift+S reaches the topmost Writer, env02's.
    stolen = [
        DialogSighting("env01", "display", "env02"),
        DialogSighting("env02", "display", "env02"),
    ]
    rows = dialog_rows("dialog_steal", 0, 1, "env01", ["env01", "env02"], stolen)
    assert [(r.from_env, r.to_env, r.result) for r in rows] == [("env01", "env02", RowResult.CROSS)]
    assert "opened in env02's program" in rows[0].detail


def test_the_openers_dialog_in_another_environments_tree_is_cross_to_it() -> None:
    # Shared runtime dir: one AT-SPI bus, so env02's tree shows env01's dialog.
    shared_bus = [
        DialogSighting("env01", "atspi", "env01"),
        DialogSighting("env02", "atspi", "env01"),
    ]
    assert _rows(shared_bus) == {("env01", "env02"): RowResult.CROSS}


def test_a_dialog_that_appeared_nowhere_is_lost() -> None:
    assert _rows([]) == {("env01", "env02"): RowResult.LOST}


def test_a_dialog_whose_owner_cannot_be_told_is_lost() -> None:
    unknown = [
        DialogSighting("env01", "display", "env01"),
        DialogSighting("env02", "display", None),
    ]
    assert _rows(unknown) == {("env01", "env02"): RowResult.LOST}


def test_a_dialog_never_seen_as_the_openers_own_is_lost() -> None:
    assert _rows([DialogSighting("env01", "display", None)]) == {("env01", "env02"): RowResult.LOST}


def _typing(
    fields: tuple[str | None, str | None],
    trees: tuple[str | None, str | None],
    typist_tree: str | None = f"Untitled 1\n{TYPED}",
) -> RowResult:
    row = dialog_typing_row(
        "dialog_steal", 0, 1, "env02", "env01", TYPED, TOKEN, fields, trees, typist_tree
    )
    assert (row.from_env, row.to_env) == ("env02", "env01")
    return row.result


def test_an_unchanged_field_and_tree_are_clean() -> None:
    assert _typing(("notes", "notes"), ("notes", "notes")) is RowResult.CLEAN


def test_the_typists_keystrokes_in_the_openers_field_are_cross() -> None:
    assert _typing(("notes", "notes62b68940"), ("notes", "notes")) is RowResult.CROSS


def test_the_typists_token_anywhere_in_the_openers_tree_is_cross() -> None:
    assert _typing(("notes", "notes"), ("notes", f"notes\n{TYPED}")) is RowResult.CROSS


def test_a_field_that_could_not_be_read_is_lost() -> None:
    assert _typing((None, None), ("", "")) is RowResult.LOST


def test_typing_that_never_showed_in_the_typists_own_tree_is_lost_not_clean() -> None:
    # The blind case: the typist's keys landed nowhere, so they could not land elsewhere.
    assert _typing(("notes", "notes"), ("notes", "notes"), "Untitled 1") is RowResult.LOST
    assert _typing(("notes", "notes"), ("notes", "notes"), None) is RowResult.LOST
    # A leak that was seen is still cross.
    assert _typing(("notes", "notes62b68940"), ("notes", "notes"), None) is RowResult.CROSS
