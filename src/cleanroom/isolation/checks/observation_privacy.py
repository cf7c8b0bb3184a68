"""Isolation test 7, observation_privacy: what one environment shows, no other one sees.

Every acting environment opens the verify server's form page in its Chromium, each in a
colour of its own. Then, for `duration_s` (120 s by default), only the odd-numbered
environments act (keys in the form field, pointer moves, clipboard sets) while the
even-numbered ones stay idle, and every environment, the canary included, is
screenshotted once a `interval_s`. Two things must hold:

* an idle environment's screen below the clock line never changes (the strip above it,
  the browser's tab strip and toolbar, may change by itself);
* no screenshot holds another environment's page colour.

Rows run from each page owner to each observed screen (see
`core.detectors.observation_rows`). The pages come from the run's verify server, or,
where the trial context has none (the leaky controls), from a server of the trial's own.
Leaks it must catch: ``shared-display``.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import ClassVar

from PIL import Image

from cleanroom.core.detectors import (
    Rgb,
    ScreenSample,
    below_line_digest,
    colour_counts,
    observation_rows,
    parse_rgb,
)
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.environments.errors import PoolError
from cleanroom.environments.interface import Needs
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.lifecycle import wait_until
from cleanroom.verify_server.client import VerifyClient
from cleanroom.verify_server.process import VerifyServerProcess

NAME = "observation_privacy"
DURATION_S = 120.0
INTERVAL_S = 1.0
# Chromium's tab strip and toolbar end above this row; they may repaint on their own.
CLOCK_LINE_PX = 100
# A page colour counts as shown when at least this many pixels have it exactly (a
# 40 x 40 patch): antialiased edges and icons never reach it by chance.
MIN_PIXELS = 1600
PAGE_READY_S = 45.0
# Saturated colours that no program's own interface uses, one per environment number.
PAGE_COLOURS = (
    "d81b60", "1e88e5", "43a047", "8e24aa", "f4511e", "00897b", "c0ca33", "5e35b1",
    "6d4c41", "039be5", "7cb342", "e53935", "3949ab", "00acc1", "fb8c00", "546e7a",
)  # fmt: skip


def page_colour(env: str) -> str:
    """The page colour of an environment, by its number (``env01`` gets the first)."""
    return PAGE_COLOURS[(int(env[3:]) - 1) % len(PAGE_COLOURS)]


def is_actor(env: str) -> bool:
    """Odd-numbered environments act; even-numbered ones stay idle."""
    return int(env[3:]) % 2 == 1


@dataclass
class _Actors:
    """Keeps the odd environments busy until stopped."""

    ctx: TrialContext
    actors: list[str]
    errors: list[str] = field(default_factory=list)
    rounds: int = 0
    acted: int = 0  # rounds in which an actor got through all of its actions
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        handles = {a: LocalHandle(self.ctx.pool, a) for a in self.actors}
        tokens = {a: str(self.ctx.mint(a)) for a in self.actors}
        while not self._stop.is_set():
            for actor, h in handles.items():
                try:
                    h.hotkey("Tab")
                    h.type_text(tokens[actor])
                    h.set_clipboard(tokens[actor])
                    h.move(200 + 37 * (self.rounds % 20), 300 + 23 * (self.rounds % 15))
                    h.hotkey("ctrl+a")
                    h.hotkey("BackSpace")
                    self.acted += 1
                except PoolError as exc:
                    self.errors.append(f"{actor}: {exc}")
            self.rounds += 1
            self._stop.wait(0.1)

    def stop(self) -> None:
        self._stop.set()


class ObservationPrivacyCheck(IsolationCheck):
    """Coloured pages, odd environments acting, even ones idle: screens must stay private."""

    name: ClassVar[str] = NAME
    number: ClassVar[int] = 7
    schedule: ClassVar[Schedule] = Schedule(window=1, soak=1)
    detects: ClassVar[tuple[Leak, ...]] = (Leak.SHARED_DISPLAY,)
    # Its pages open in each environment's browser.
    requires: ClassVar[Needs] = Needs(real_desktops=True, open_url=True)
    needs: ClassVar[tuple[str, ...]] = ("browser",)

    def __init__(
        self,
        *,
        duration_s: float = DURATION_S,
        interval_s: float = INTERVAL_S,
        clock_line_px: int = CLOCK_LINE_PX,
        min_pixels: int = MIN_PIXELS,
    ) -> None:
        self.duration_s = duration_s
        self.interval_s = interval_s
        self.clock_line_px = clock_line_px
        self.min_pixels = min_pixels

    def pairs(self, ctx: TrialContext) -> list[tuple[str, str]]:
        """From each page owner to every other observed screen, the canary included."""
        return [(a, b) for a in ctx.acting_envs for b in ctx.pool.names if a != b]

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        """Show the pages, let the odd environments act, and screenshot everyone."""
        with _verify_client(ctx, trial) as verify:
            return self._run(ctx, trial, verify)

    def _run(self, ctx: TrialContext, trial: int, verify: VerifyClient) -> list[IsolationRow]:
        pool = ctx.pool
        owners = ctx.acting_envs
        actors = [e for e in owners if is_actor(e)]
        idle = [e for e in owners if not is_actor(e)]
        colours = {e: parse_rgb(page_colour(e)) for e in owners}
        shown = {e: self._show_page(ctx, verify, e) for e in owners}

        samples: list[ScreenSample] = []
        kept = _Kept()
        busy = _Actors(ctx, actors)
        acting = threading.Thread(target=busy.run, name="observation-actors", daemon=True)
        acting.start()
        started = time.monotonic()
        try:
            while True:
                tick = time.monotonic()
                for env in pool.names:
                    samples.append(self._sample(ctx, env, colours, kept))
                if tick - started >= self.duration_s:
                    break
                time.sleep(max(0.0, self.interval_s - (time.monotonic() - tick)))
        finally:
            busy.stop()
            acting.join(timeout=30)

        for key, png in kept.pngs.items():
            ctx.write_evidence(NAME, trial, f"{key}.png", png)
        ctx.write_evidence(
            NAME,
            trial,
            "observation.json",
            {
                "actors": actors,
                "idle": idle,
                "colours": {e: page_colour(e) for e in owners},
                "page_shown_after_s": shown,
                "duration_s": self.duration_s,
                "clock_line_px": self.clock_line_px,
                "min_pixels": self.min_pixels,
                "actor_rounds": busy.rounds,
                "actor_rounds_completed": busy.acted,
                "actor_errors": busy.errors[:50],
                "samples": [s.__dict__ for s in samples],
            },
        )
        rows = observation_rows(
            NAME, trial, ctx.window, samples, actors, idle, pool.names, self.min_pixels
        )
        if actors and not busy.acted:
            # Idle screens that held still while nobody acted prove nothing.
            why = f"the actors never got through a round: {busy.errors[:1]}"
            rows = [_lost_if_clean(r, why) for r in rows]
        return rows

    def _show_page(self, ctx: TrialContext, verify: VerifyClient, env: str) -> float | None:
        """Open the env's coloured form page and raise its browser; return how long the
        colour took to show (None if it never did: the rows will say lost)."""
        lease = verify.lease(ctx.mint(env), env=env, ttl_s=self.duration_s + 600)
        started = time.monotonic()
        ctx.pool.open_url(env, f"{lease.form_url}?colour={page_colour(env)}")
        LocalHandle(ctx.pool, env).focus(program="browser")
        colour = parse_rgb(page_colour(env))

        def showing() -> bool:
            w, h, rgb = _grab(ctx, env)
            return colour_counts(rgb, w, h, [colour])[colour] >= self.min_pixels

        if not wait_until(showing, PAGE_READY_S, poll_s=0.3):
            return None
        # Let the page finish painting (fonts, the focus ring) before idle screens count.
        time.sleep(1.0)
        return time.monotonic() - started

    def _sample(
        self, ctx: TrialContext, env: str, colours: dict[str, Rgb], kept: _Kept
    ) -> ScreenSample:
        """One screenshot of ``env``, reduced to its digest below the clock line and the
        pixel count of every page colour."""
        at = time.time()
        try:
            w, h, rgb = _grab(ctx, env)
        except Exception:  # whatever the screen library raises: this screen was not read
            return ScreenSample(env, at, None)
        counts = colour_counts(rgb, w, h, colours.values())
        digest = below_line_digest(rgb, w, self.clock_line_px)
        kept.offer(env, digest, w, h, rgb)
        return ScreenSample(env, at, digest, {e: counts[c] for e, c in colours.items()})


@dataclass
class _Kept:
    """Evidence screenshots: each env's first, and its first that differs below the line."""

    first: dict[str, str] = field(default_factory=dict)
    pngs: dict[str, bytes] = field(default_factory=dict)

    def offer(self, env: str, digest: str, width: int, height: int, rgb: bytes) -> None:
        if env not in self.first:
            self.first[env] = digest
            self.pngs[f"{env}-first"] = _png(width, height, rgb)
        elif digest != self.first[env] and f"{env}-changed" not in self.pngs:
            self.pngs[f"{env}-changed"] = _png(width, height, rgb)


@contextmanager
def _verify_client(ctx: TrialContext, trial: int) -> Iterator[VerifyClient]:
    """The run's verify server; without one (a leaky control runs none), a server of the
    trial's own, in its evidence folder, stopped when the trial ends."""
    if ctx.verify is not None:
        yield ctx.verify
        return
    with (
        VerifyServerProcess.start(ctx.evidence_dir(NAME, trial) / "verify-server") as server,
        server.client() as client,
    ):
        yield client


def _grab(ctx: TrialContext, env: str) -> tuple[int, int, bytes]:
    pixels = ctx.pool.pixels(env)
    return pixels.width, pixels.height, pixels.rgb


def _lost_if_clean(row: IsolationRow, why: str) -> IsolationRow:
    if row.result is not RowResult.CLEAN:
        return row
    return replace(row, result=RowResult.LOST, detail=why[:500])


def _png(width: int, height: int, rgb: bytes) -> bytes:
    buf = io.BytesIO()
    Image.frombytes("RGB", (width, height), rgb).save(buf, "PNG", compress_level=1)
    return buf.getvalue()
