"""The run's own controls as a step of the harness loop: every counted check proven here.

After the windows, on the run's own pool and verify server, the planted controls: the
token sweep's (a file holding one environment's token planted in another's home, which
the sweep must find and attribute, `isolation.controls.token_sweep`), the canary's (leaks
planted in env00, which its sampling and rule must see, and text typed at the parked
console, which its own looks must see, `isolation.controls.canary`) and the audit's (a
token delivered through another environment's lease, which the verify server's audit
must report). Then every planned test's leaky control: the fewest leaky setups and
faults that give each test one (`isolation.controls.matrix.cover_setups`), on pools of their own
beside the run's pool, each test run again under its next setup when it did not fire.
Every cell is stored in the run database, so the report can say which check was proven
in this run and how; the number is published only when every counted check was
(`core.publish`).
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from cleanroom.core.isolation import CONTROL_WINDOW
from cleanroom.core.outcomes import Outcome
from cleanroom.core.tokens import RolloutId, Token, mint
from cleanroom.harness.form_audit_rows import AUDIT_TEST, LeasedRollout
from cleanroom.harness.form_audit_window import invalidate_named, read_audit
from cleanroom.harness.loop import LoopServices, load_battery
from cleanroom.isolation.controls.canary import run_canary_control, run_console_control
from cleanroom.isolation.controls.matrix import Cell, run_controls
from cleanroom.isolation.controls.token_sweep import run_sweep_control
from cleanroom.store.rundb import LeakyControlResult, RunStore
from cleanroom.verify_server.client import Lease

PLANTED_LEAK = "planted: a token delivered through another environment's lease"
# Rollout numbers of the audit's control in the control window (clear of the others').
_AUDIT_SEQ = 800
_AUDIT_ENVS = ("env01", "env02", "env03")


def leaky_controls(s: LoopServices, names: Sequence[str]) -> list[str]:
    """Run the planted controls and the leaky controls of the tests ``names``; return one
    line per cell."""
    lines = [*sweep_control(s), *canary_control(s), audit_control(s)]
    battery = load_battery()
    tests = [battery[name] for name in names if name in battery]
    missing = [name for name in names if name not in battery]
    if missing:
        s.progress.event(f"[red]leaky controls: no test named {', '.join(missing)}[/]")
    s.progress.step(f"leaky controls: {', '.join(t.name for t in tests)}, one setup each")

    def said(cell: Cell) -> None:
        s.progress.event(f"leaky control {cell.test} under {cell.setup}: {cell.verdict}")

    matrix = run_controls(
        s.store.run_dir,
        s.store,
        tests,
        cover=True,
        pool_root=s.config.pool_root,
        warm_standby=s.config.warm_standby,
        on_cell=said,
    )
    for test in matrix.unproven():
        s.progress.event(f"[red]{test} is unproven in this run[/]")
    return lines + [f"{c.test} under {c.setup}: {c.verdict}" for c in matrix.cells]


def sweep_control(s: LoopServices) -> list[str]:
    """Plant a foreign token in a home of the run's pool, store the cell, and return its
    line."""
    s.progress.step("the token sweep's control: a foreign token planted in a home")
    cell = run_sweep_control(s.pool)
    s.store.add_leaky_control(cell)
    verdict = "fired" if cell.fired else "did not fire"
    colour = "green" if cell.fired else "red"
    s.progress.event(f"token sweep control, {cell.leak}: [{colour}]{verdict}[/] ({cell.detail})")
    return [f"{cell.test} under {cell.leak}: {verdict}"]


def canary_control(s: LoopServices) -> list[str]:
    """Plant leaks in the run's canary (and its parked console, when active), store each
    cell, and return one line per cell."""
    s.progress.step("the canary's control: leaks planted in env00 after the windows")
    cells = run_canary_control(s.pool)
    if s.parked is not None:
        cells.append(run_console_control(s.parked))
    else:
        s.progress.event("the parked console is not active: no control for it, nothing claimed")
    lines = []
    for cell in cells:
        s.store.add_leaky_control(cell)
        verdict = "fired" if cell.fired else "did not fire"
        colour = "green" if cell.fired else "red"
        s.progress.event(
            f"{cell.test} control, {cell.leak}: [{colour}]{verdict}[/] ({cell.detail})"
        )
        lines.append(f"{cell.test} under {cell.leak}: {verdict}")
    return lines


def audit_control(s: LoopServices) -> str:
    """The audit's planted control: env02's token submitted through env01's lease, on
    purpose. The audit must report it; the rollouts it names become invalid like any
    others. Its rows belong to the control window, never to the published number."""
    s.progress.step("the audit's control: env02's token through env01's lease, on purpose")
    with s.verify_server.client(timeout=15.0) as client:
        tokens = {
            env: _start(s.store, env, _AUDIT_SEQ + seq)
            for seq, env in enumerate(_AUDIT_ENVS, start=1)
        }
        leases = {env: client.lease(t, env=env) for env, t in tokens.items()}
        _submit(leases["env01"], str(tokens["env01"]))
        _submit(leases["env01"], str(tokens["env02"]))  # the planted leak
        for env, token in tokens.items():
            _finish(s.store, token, client.verify_form(leases[env]))
        leased = [LeasedRollout(env, t.rollout_id) for env, t in tokens.items()]
        audit = read_audit(client, CONTROL_WINDOW, leased)
        invalidated = invalidate_named(s.store, audit.cross)
    fired = bool(audit.cross) and not audit.error
    s.store.add_leaky_control(
        LeakyControlResult(
            AUDIT_TEST,
            PLANTED_LEAK,
            fired,
            len(audit.rows),
            len(audit.cross),
            audit.error
            or "; ".join(f"{c.token_env}'s token reached {c.attributed_env}" for c in audit.cross),
        )
    )
    s.progress.event(
        f"audit control {'[green]fired[/]' if fired else '[red]did not fire[/]'}: "
        f"{len(audit.cross)} cross submission(s), {invalidated} rollout(s) invalid"
    )
    return f"{AUDIT_TEST} under {PLANTED_LEAK}: {'fired' if fired else 'did not fire'}"


def _start(store: RunStore, env: str, seq: int) -> Token:
    token = mint(RolloutId(env, CONTROL_WINDOW, seq))
    store.start_rollout(token, "form:planted-leak")
    return token


def _finish(store: RunStore, token: Token, outcome: Outcome) -> None:
    store.add_verifier_result(token.rollout_id, "verify_server", outcome)
    store.finish_rollout(token.rollout_id, outcome)


def _submit(lease: Lease, text: str) -> None:
    """What a browser does when the form is filled in: a form-encoded POST to the lease."""
    response = httpx.post(lease.form_url, data={"token": text}, timeout=10, trust_env=False)
    response.raise_for_status()
