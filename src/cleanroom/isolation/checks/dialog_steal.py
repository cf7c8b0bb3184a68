"""Test 5, dialog_steal: one environment opens Save As while another types a token.

Each time the opener presses Save As, every environment's display and AT-SPI tree is
read, and each Save dialog found is attributed to the environment whose program owns it
(`dialog_views`). The dialog belongs in the opener's own program: one that opened in
another environment's program (input aimed at the opener acted there), or that shows in
another environment's view, is cross from the opener to it. The opener's own file-name
field is read through AT-SPI against a baseline taken when the dialog was opened alone:
a fragment of the other's typing in it, or the other's token anywhere in the opener's
tree, is cross from the typist. A dialog that appears nowhere is lost. Bystanders'
screenshots are timed before and during, for the latency plot."""

from __future__ import annotations

import threading
import time
from typing import ClassVar

from cleanroom.core.detectors import dialog_rows, dialog_typing_row
from cleanroom.core.isolation import IsolationRow
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.isolation.checks.dialog_views import DialogViews, Look
from cleanroom.isolation.checks.latency import LatencyTimer
from cleanroom.isolation.checks.writer_steps import clear_document
from cleanroom.lifecycle import wait_until

DIALOG_TIMEOUT_S = 20.0
# Once a dialog is on a display, how long its tree is given to show it through AT-SPI
# (generous: the machine is shared and a loaded AT-SPI bus answers slowly).
TREE_TIMEOUT_S = 15.0
CHAR_GAP_S = 0.04  # slow enough that the dialog opens while the token is being typed
_SHOTS_BEFORE = 3


class DialogNotShown(RuntimeError):
    """Save As did not close in time (or one was open before the trial pressed it)."""


def open_save_as(ctx: TrialContext, views: DialogViews, opener: str) -> Look:
    """Press Ctrl+Shift+S in the opener's Writer and look where the dialog appeared.

    Waits for a Save window on any display, then for the opener's own tree to show its
    dialog, unless the window's owner is another environment (whose tree may be one no
    reader can reach). Returns the last look, whatever it found: no dialog is evidence.
    """
    handle = LocalHandle(ctx.pool, opener)
    handle.focus(program="writer")
    handle.hotkey("ctrl+shift+s")
    wait_until(views.any_save_window, DIALOG_TIMEOUT_S, poll_s=0.2)
    looks: list[Look] = []

    def settled() -> bool:
        look = views.look()
        looks.append(look)
        owners = {look.window_owner(w) for ws in look.windows.values() for w in ws}
        foreign = bool(owners - {opener})
        return look.own_field(opener) is not None or (foreign and len(looks) > 1)

    wait_until(settled, TREE_TIMEOUT_S, poll_s=0.5)
    return looks[-1]


def close_save_as(ctx: TrialContext, views: DialogViews, opener: str) -> None:
    """Cancel every Save dialog (Escape on the opener, then on any display still showing
    one) and wait until none is left."""
    for _ in range(3):
        shown = views.save_windows()
        if not any(shown.values()):
            return
        LocalHandle(ctx.pool, opener).hotkey("escape")
        time.sleep(0.5)
        for env, wins in views.save_windows().items():
            if wins and env != opener:
                LocalHandle(ctx.pool, env).hotkey("escape")
                time.sleep(0.5)
    if not wait_until(lambda: not views.any_save_window(), DIALOG_TIMEOUT_S, poll_s=0.2):
        raise DialogNotShown("Save As never closed")


class DialogStealCheck(IsolationCheck):
    """A dialog opening in one environment must not take another's typing."""

    name: ClassVar[str] = "dialog_steal"
    number: ClassVar[int] = 5
    schedule: ClassVar[Schedule] = Schedule(window=3, soak=3)
    # Shared display: the opener's keys reach the other's Writer. Shared runtime dir: one
    # AT-SPI bus, so each tree shows the other's dialog and text.
    detects: ClassVar[tuple[Leak, ...]] = (Leak.SHARED_DISPLAY, Leak.SHARED_RUNTIME_DIR)
    needs: ClassVar[tuple[str, ...]] = ("writer",)

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        """Baseline the dialog, then open it again while the other types; compare."""
        envs = ctx.acting_envs
        if len(envs) < 2:
            raise ValueError("dialog_steal needs two acting environments")
        opener, typist = envs[trial % len(envs)], envs[(trial + 1) % len(envs)]
        bystanders = [e for e in envs if e != opener]
        ty = LocalHandle(ctx.pool, typist)
        views = DialogViews(ctx.pool, envs)
        if views.any_save_window():
            raise DialogNotShown("a Save dialog was open before the trial pressed Save As")
        timer = LatencyTimer(ctx, self.name, bystanders)
        for _ in range(_SHOTS_BEFORE):
            timer.shoot_once()
        baseline = open_save_as(ctx, views, opener)
        close_save_as(ctx, views, opener)
        clear_document(ty)
        token = str(ctx.mint(typist))
        text = f"dialog {token} "
        timer.phase = "during"
        during = threading.Thread(target=timer.run, name="dialog-latency", daemon=True)
        typing_done = threading.Event()

        def type_slowly() -> None:
            try:
                for ch in text:
                    ty.type_text(ch)
                    time.sleep(CHAR_GAP_S)
            finally:
                typing_done.set()

        typer_thread = threading.Thread(target=type_slowly, daemon=True)
        during.start()
        typer_thread.start()
        opened_at = time.time()
        try:
            time.sleep(len(text) * CHAR_GAP_S / 4)  # a quarter of the token is typed first
            opened = open_save_as(ctx, views, opener)
            typing_done.wait(timeout=60)
            time.sleep(0.5)
            observed = views.look()  # after the last keystroke, the dialog still open
        finally:
            typer_thread.join(timeout=60)
            timer.stop()
            during.join(timeout=10)
            close_save_as(ctx, views, opener)
        sightings = sorted(
            {s for look in (baseline, opened, observed) for s in look.sightings()},
            key=lambda s: (s.seen_in, s.via, str(s.owner)),
        )
        rows = dialog_rows(self.name, trial, ctx.window, opener, envs, sightings)
        fields = (baseline.own_field(opener), observed.own_field(opener))
        trees = (baseline.tree_text(opener), observed.tree_text(opener))
        rows.append(
            dialog_typing_row(
                self.name,
                trial,
                ctx.window,
                typist,
                opener,
                text.strip(),
                token,
                fields,
                trees,
                observed.tree_text(typist),
            )
        )
        ctx.write_evidence(
            self.name,
            trial,
            "dialog.json",
            {
                "opener": opener,
                "typist": typist,
                "typed": text,
                "baseline_field": fields[0],
                "field_during": fields[1],
                "typist_tree_shows_its_typing": token in (observed.tree_text(typist) or ""),
                "baseline_look": baseline.to_json(),
                "look_during": observed.to_json(),
                "dialog_opened_at": opened_at,
                "screenshots": timer.shots,
                "failed_screenshots": timer.failures,
            },
        )
        return rows
