"""The main job on the embedded defaults: every capability that exists, end to end.

One run folder, one run database, one window:

1. a verify server in its own process;
2. form rollouts on env01, env02 and env03: env01 submits its own token, env02's token is
   delivered through env01's lease on purpose (a planted leak, the audit's positive
   control), env03 does nothing; each is verified by the server;
3. the real OSWorld rename task in local guests: validated first (fails at t=0, passes
   after the oracle, fails after no action), then an honest rollout and a no-op rollout;
4. the window's audit, written as isolation rows; the rollouts a cross row names become
   invalid (``isolation``);
5. a summary, and what the published-number rule says about this run.
"""

from __future__ import annotations

import shlex
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.publish import Publication, publish
from cleanroom.core.tokens import RolloutId, Token, mint
from cleanroom.guests.local import LocalGuest
from cleanroom.harness.audit import (
    AUDIT_TEST,
    CrossSubmission,
    LeasedRollout,
    audit_rows,
    named_rollouts,
)
from cleanroom.reports.html import render_html, write_html
from cleanroom.reports.machine import machine_info
from cleanroom.reports.model import build_report
from cleanroom.store.rundb import RunStore
from cleanroom.verifiers.osworld.bundled import bundled_task
from cleanroom.verifiers.osworld.evaluator import TaskRun
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task import load_task
from cleanroom.verifiers.osworld.validate import validate_task
from cleanroom.verify_server.client import Lease, VerifyClient
from cleanroom.verify_server.process import VerifyServerProcess

WINDOW = 1
RENAME_ORACLE = "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2"


@dataclass
class DemoResult:
    """What the demo did, for the summary and for tests."""

    run_dir: Path
    validation: str = ""
    audit_cross: int = 0
    notes: list[str] = field(default_factory=list)


def _rollout(store: RunStore, env: str, seq: int, task: str) -> Token:
    token = mint(RolloutId(env, WINDOW, seq))
    store.start_rollout(token, task)
    return token


def _finish(store: RunStore, token: Token, verifier: str, outcome: Outcome) -> None:
    store.add_verifier_result(token.rollout_id, verifier, outcome)
    store.finish_rollout(token.rollout_id, outcome)


def _submit(lease: Lease, text: str) -> None:
    """What a browser does when the form is filled in: a form-encoded POST to the lease."""
    response = httpx.post(lease.form_url, data={"token": text}, timeout=10, trust_env=False)
    response.raise_for_status()


def _form_rollouts(store: RunStore, client: VerifyClient) -> list[LeasedRollout]:
    honest = _rollout(store, "env01", 1, "form")
    leaked = _rollout(store, "env02", 2, "form")
    idle = _rollout(store, "env03", 3, "form")
    leases = {t.rollout_id: client.lease(t) for t in (honest, leaked, idle)}
    _submit(leases[honest.rollout_id], str(honest))
    # The planted leak: env02's token arrives through env01's lease.
    _submit(leases[honest.rollout_id], str(leaked))
    for token in (honest, leaked, idle):
        _finish(store, token, "verify_server", client.verify_form(leases[token.rollout_id]))
    return [LeasedRollout(t.env, t.rollout_id) for t in (honest, leaked, idle)]


def _osworld_rollouts(store: RunStore, work: Path, result: DemoResult) -> None:
    task = load_task(bundled_task())
    settings = CheckSettings(getter_timeout=30, step_timeout=30)
    base = LocalGuest(home=str(work / "template-home"))
    try:
        validation = validate_task(task, base, RENAME_ORACLE, settings, action_timeout=30)
    finally:
        base.close()
    result.validation = validation.verdict
    for env, seq, act in (("env01", 4, True), ("env03", 5, False)):
        token = _rollout(store, env, seq, "osworld:rename")
        guest = LocalGuest(home=str(work / f"home-{env}"))
        try:
            with TaskRun(task, guest, settings) as run:
                outcome = run.setup()
                if outcome is None and act:
                    # Every string a policy types carries its rollout's token.
                    command = f"{RENAME_ORACLE}  # {shlex.quote(str(token))}"
                    guest.exec(command, shell=True, timeout=30)
                if outcome is None:
                    outcome = run.check()
        finally:
            guest.close()
        _finish(store, token, "osworld", outcome)


def _audit(store: RunStore, client: VerifyClient, leased: list[LeasedRollout]) -> int:
    audit = client.audit(WINDOW)
    cross = [
        CrossSubmission(r.token, r.token_env, r.attributed_env, r.rollout_id) for r in audit.rows
    ]
    store.add_isolation_rows(audit_rows(WINDOW, leased, cross))
    if cross:
        why = "; ".join(f"{c.token_env}'s token reached {c.attributed_env}" for c in cross)
        store.mark_invalid(named_rollouts(cross), Reason.ISOLATION, f"{AUDIT_TEST}: {why}")
    return len(cross)


def run_demo(run_dir: Path, console: Console | None = None) -> DemoResult:
    """Run the demo into ``run_dir`` (created) and print its summary."""
    console = console or Console()
    result = DemoResult(run_dir)
    store = RunStore.create(run_dir, meta={"job": "demo", "machine": machine_info()})
    started = time.time()
    try:
        store.open_window(WINDOW)
        with tempfile.TemporaryDirectory(prefix="cleanroom-demo-") as tmp:
            console.print("[bold]1.[/] starting the verify server")
            with VerifyServerProcess.start(run_dir / "verify-server") as server:
                client = server.client()
                console.print(f"   listening on {server.url}")
                console.print("[bold]2.[/] form rollouts: honest, leaked on purpose, idle")
                leased = _form_rollouts(store, client)
                console.print("[bold]3.[/] OSWorld rename task: validate the checker, then run")
                _osworld_rollouts(store, Path(tmp), result)
                console.print("[bold]4.[/] auditing the window")
                result.audit_cross = _audit(store, client, leased)
                client.close()
        store.close_window(WINDOW)
        store.finish_run()
        _summary(store, result, console, time.time() - started)
    except BaseException:
        store.finish_run("failed")
        raise
    finally:
        store.close()
    with RunStore.open(run_dir, owner=False) as reader:
        html = render_html(build_report(reader), reader.canary_samples())
    console.print(f"HTML report: {write_html(run_dir / 'report.html', html)}")
    return result


def _summary(store: RunStore, result: DemoResult, console: Console, elapsed: float) -> None:
    table = Table(title=f"Rollouts of window {WINDOW}")
    for col in ("rollout", "task", "outcome", "reason", "score"):
        table.add_column(col, no_wrap=True)
    table.add_column("detail")
    colour = {Status.SUCCESS: "green", Status.FAILURE: "yellow", Status.INVALID: "red"}
    for r in store.rollouts():
        status = r.outcome.value if r.outcome else "unfinished"
        style = colour.get(r.outcome, "") if r.outcome else ""
        table.add_row(
            r.rollout_id, r.task, f"[{style}]{status}[/]", r.reason.value if r.reason else "",
            "" if r.score is None else f"{r.score:g}", r.detail[:70],
        )  # fmt: skip
    console.print(table)
    rows = store.isolation_rows(WINDOW)
    cross = [r for r in rows if r.result.value == "cross"]
    console.print(
        f"OSWorld rename checker validation: [bold]{result.validation}[/] "
        "(fails at t=0, passes after the oracle, fails after no action)"
    )
    console.print(
        f"Audit of window {WINDOW}: {len(rows)} isolation rows, {len(cross)} cross "
        + "; ".join(f"{r.from_env} -> {r.to_env}" for r in cross)
        + " (the planted leak: the audit's detector fired)"
    )
    env_hours = elapsed * 3 / 3600
    verdict = publish(rows, env_hours, store.control_results())
    if isinstance(verdict, Publication):
        console.print(f"Isolation: {verdict.text}")
    else:
        console.print(f"Isolation number: [bold]refused[/]: {verdict.reason}")
    console.print(
        f"Run folder: {result.run_dir} (database: {store.path.name}); "
        f"full report: cleanroom report {result.run_dir}"
    )
