"""The canary's planted control: a change planted in env00 must be seen.

After the windows (never inside one, so no measured window is touched), the harness
plants in the canary what a leak would bring there: keystrokes typed into its Writer, as
keys delivered to the wrong display would arrive, and a clipboard string. Each plant
carries a token of another environment. The watcher's own sampling and the canary rule
(`core.canary.judge_canary`) must report the change and attribute it to that environment;
each plant is one leaky-control cell of the canary test, so the report can say the
canary was proven in this run. The clipboard is cleared again afterwards.

The parked console has its own plant (`run_console_control`): text carrying another
environment's token typed at its prompt (``tmux send-keys``), which the console's own
looks and the same rule must see and attribute; a cell of the console's test.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cleanroom.core.canary import (
    CANARY_ENV,
    CANARY_TEST,
    PARKED_CONSOLE_TEST,
    Sample,
    judge_canary,
)
from cleanroom.core.isolation import CONTROL_WINDOW, RowResult, Window
from cleanroom.core.tokens import RolloutId, Token, mint
from cleanroom.environments.actions import ClearClipboard, Focus, SetClipboard, TypeText
from cleanroom.environments.errors import PoolError
from cleanroom.environments.interface import Desktops
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.isolation.canary.parked_console import ParkedConsole
from cleanroom.isolation.canary.watcher import take_sample
from cleanroom.lifecycle import wait_until
from cleanroom.store.rundb import LeakyControlResult

SEE_WITHIN_S = 10.0
_POLL_S = 0.25


@dataclass(frozen=True)
class Plant:
    """One way a leak reaches the canary, and how the harness wires it in."""

    leak: str
    apply: Callable[[Desktops, str], None]
    undo: Callable[[Desktops], None]


def _type_into_writer(pool: Desktops, text: str) -> None:
    pool.harness_act(CANARY_ENV, Focus("focus", program="writer"))
    pool.harness_act(CANARY_ENV, TypeText("type", f" {text} "))


def _set_clipboard(pool: Desktops, text: str) -> None:
    pool.harness_act(CANARY_ENV, SetClipboard("set_clipboard", text))


def _nothing(pool: Desktops) -> None:
    return None


def _clear_clipboard(pool: Desktops) -> None:
    pool.harness_act(CANARY_ENV, ClearClipboard("clear_clipboard"))


PLANTS = (
    Plant("planted: keystrokes typed into env00's Writer", _type_into_writer, _nothing),
    Plant("planted: env00's clipboard set", _set_clipboard, _clear_clipboard),
)
CONSOLE_LEAK = "planted: text typed at env00's parked console"


def run_canary_control(
    pool: Desktops,
    *,
    source_env: str = "env01",
    see_within_s: float = SEE_WITHIN_S,
    plants: Sequence[Plant] = PLANTS,
) -> list[LeakyControlResult]:
    """Plant each leak in env00 in turn and judge what the canary's samples say."""
    handle = LocalHandle(pool, CANARY_ENV)
    results = []
    for seq, plant in enumerate(plants, start=1):
        token = mint(RolloutId(source_env, CONTROL_WINDOW, 900 + seq))
        try:
            results.append(
                _see_plant(
                    lambda: take_sample(handle, None),
                    functools.partial(plant.apply, pool),
                    token,
                    CANARY_TEST,
                    plant.leak,
                    see_within_s,
                )
            )
        finally:
            with contextlib.suppress(PoolError):  # the cell already says what went wrong
                plant.undo(pool)
    return results


def run_console_control(
    console: ParkedConsole, *, source_env: str = "env01", see_within_s: float = SEE_WITHIN_S
) -> LeakyControlResult:
    """Type text carrying ``source_env``'s token at the parked console's prompt and judge
    what its samples say; the typed line is erased again afterwards."""
    token = mint(RolloutId(source_env, CONTROL_WINDOW, 900 + len(PLANTS) + 1))
    try:
        return _see_plant(
            lambda: console.sample(None),
            console.send_text,
            token,
            PARKED_CONSOLE_TEST,
            CONSOLE_LEAK,
            see_within_s,
        )
    finally:
        with contextlib.suppress(PoolError):
            console.clear_line()


def _see_plant(
    look: Callable[[], Sample],
    apply: Callable[[str], None],
    token: Token,
    test: str,
    leak: str,
    see_within_s: float,
) -> LeakyControlResult:
    """Wire one leak in through ``apply`` and look until the watch's rule sees it."""
    before = look()
    if not before.ok:
        return _cell(
            test, leak, False, 0, 0, f"could not be read before the plant: {before.detail}"
        )
    started = time.time()
    try:
        apply(f"leaked {token}")
    except PoolError as exc:
        return _cell(test, leak, False, 0, 0, f"the plant could not be wired in: {exc}")
    samples: list[Sample] = []

    def names_the_source() -> bool:
        # Typed text lands key by key: a look in the middle of the typing shows a change
        # without the whole token yet, so looking goes on until one names the source.
        sample = look()
        samples.append(sample)
        return sample.ok and sample.state != before.state and token.rollout.env in sample.sources

    wait_until(names_the_source, see_within_s, _POLL_S)
    window = Window(CONTROL_WINDOW, started, time.time())
    _, rows = judge_canary(window, samples, before, test=test)
    cross = [r for r in rows if r.result is RowResult.CROSS]
    fired = any(token.rollout.env in r.from_env.split(",") for r in cross)
    if fired:
        seen = "; ".join(dict.fromkeys(r.detail for r in cross))
        detail = f"{seen} changed, attributed to {token.rollout.env}"
    elif cross:
        detail = f"a change was seen but not attributed to {token.rollout.env}"
    else:
        detail = f"no change seen in {len(samples)} sample(s) over {see_within_s:g} s"
    return _cell(test, leak, fired, len(rows), len(cross), detail)


def _cell(
    test: str, leak: str, fired: bool, rows: int, cross: int, detail: str
) -> LeakyControlResult:
    return LeakyControlResult(test, leak, fired, rows, cross, detail)
