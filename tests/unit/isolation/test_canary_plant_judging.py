"""The canary's planted control judges what its looks saw, however the typing lands."""

from __future__ import annotations

import time
from collections.abc import Iterator

from cleanroom.core.canary import CanarySample
from cleanroom.core.isolation import CONTROL_WINDOW
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.isolation.controls.canary import _see_plant

TOKEN = mint(RolloutId("env01", CONTROL_WINDOW, 901))


def looks(*states: tuple[str, tuple[str, ...]]) -> Iterator[CanarySample]:
    for text, sources in states:
        yield CanarySample(time.time(), True, text, "windows", "clip", sources=sources)
    while True:  # the last state stays
        yield CanarySample(time.time(), True, text, "windows", "clip", sources=sources)


def test_a_look_in_the_middle_of_the_typing_does_not_end_the_control_unattributed() -> None:
    seq = looks(("before", ()), ("leaked env01-w", ()), (f"leaked {TOKEN}", ("env01",)))

    cell = _see_plant(lambda: next(seq), lambda text: None, TOKEN, "canaries", "typed", 2.0)

    assert cell.fired, cell.detail
    assert "attributed to env01" in cell.detail


def test_a_change_that_never_names_the_source_is_seen_but_not_fired() -> None:
    seq = looks(("before", ()), ("something else", ()))

    cell = _see_plant(lambda: next(seq), lambda text: None, TOKEN, "canaries", "typed", 0.6)

    assert not cell.fired
    assert cell.detail == "a change was seen but not attributed to env01"


def test_no_change_at_all_is_not_fired() -> None:
    seq = looks(("before", ()))

    cell = _see_plant(lambda: next(seq), lambda text: None, TOKEN, "canaries", "typed", 0.6)

    assert (cell.fired, cell.cross) == (False, 0)
    assert cell.detail.startswith("no change seen")
