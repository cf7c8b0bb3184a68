"""The modifier, dialog and interleaving detectors: each fires on a deliberate leak and
stays quiet on clean input."""

from __future__ import annotations

import pytest

from cleanroom.core.detectors import (
    ModifierEffect,
    interleaved_senders,
    modifier_effect,
    shifted,
    typed_fragment,
)

OWN = "env02-w001-r50001-62b68940 env02-w001-r50002-aaaa1111 "
OTHER = "env01-w001-r50003-3f8572ad env01-w001-r50004-bbbb2222 "


def test_shift_turns_letters_to_capitals_and_digits_to_symbols() -> None:
    assert shifted("env01-w") == "ENV)!_W"


def test_a_word_that_arrived_as_typed_is_exact() -> None:
    assert modifier_effect("bilejru", "xx bilejru") is ModifierEffect.EXACT


def test_capitals_mean_shift_leaked() -> None:
    assert modifier_effect("bilejru", "BILEJRU") is ModifierEffect.SHIFTED


def test_a_word_found_nowhere_is_missing() -> None:
    assert modifier_effect("bilejru", "") is ModifierEffect.MISSING


def test_shift_held_for_part_of_the_word_is_partial() -> None:
    assert modifier_effect("bilejruilb", "bilEJRUILB") is ModifierEffect.PARTIAL


def test_the_modifier_detector_refuses_a_word_with_capitals() -> None:
    with pytest.raises(ValueError):
        modifier_effect("Bile", "Bile")


def test_a_fragment_of_foreign_typing_in_a_field_is_found() -> None:
    assert typed_fragment("notes", "env02-w001", "dialog env02-w001-r5") == "env02-w001"


def test_an_unchanged_field_holds_no_fragment() -> None:
    assert typed_fragment("notes", "notes", "dialog env02-w001") is None


def test_keystrokes_mixed_character_by_character_name_their_sender() -> None:
    mixed = "".join(a + b for a, b in zip(OWN, OTHER, strict=True))
    assert interleaved_senders(mixed, OWN, {"env01": OTHER}) == ["env01"]


def test_a_document_holding_only_its_own_text_has_no_interleaved_sender() -> None:
    assert interleaved_senders(OWN, OWN, {"env01": OTHER}) == []


def test_a_document_missing_some_of_its_own_text_accuses_no_one() -> None:
    assert interleaved_senders(OWN[:20], OWN, {"env01": OTHER}) == []
