"""The main job on the embedded defaults: every capability, end to end, in a few minutes.

One run folder, one run database, the harness loop (`loop`) sized for a 2-core machine:

1. a verify server in its own process, and a pool of three environments plus the
   canary ``env00`` (watched throughout);
2. the positive control (two Writers in one session);
3. the audit's own control, before the first window: form rollouts where env02's token
   is delivered through env01's lease on purpose; the audit must report it, and the
   rollouts it names become invalid (``isolation``). It is stored as a leaky-control
   result, never as a row of the published number;
4. the real OSWorld rename task's checker validated in local guests (fails at t=0,
   passes after the oracle, fails after no action), then an honest and a no-op rollout;
5. one short window: smoke rollouts on every acting environment, every isolation test
   at reduced trials (observation privacy watching for 20 s, not 120 s), the audit and
   the canary verdict;
6. the leaky controls for a few tests (each on a pool with one protection removed);
7. the container red-team matrix (saved as ``redteam.json`` for the report);
8. the report: text on screen, ``report.html`` in the run folder.
"""

from __future__ import annotations

import json
import shlex
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from rich.console import Console

from cleanroom.core.isolation import CONTROL_WINDOW
from cleanroom.core.outcomes import Outcome
from cleanroom.core.tokens import RolloutId, Token, mint
from cleanroom.environments.leaks import Leak
from cleanroom.guests.local import LocalGuest
from cleanroom.harness.audit import AUDIT_TEST, LeasedRollout
from cleanroom.harness.audit_step import invalidate_named, read_audit
from cleanroom.harness.controls_step import leaky_controls
from cleanroom.harness.loop import LoopConfig, LoopResult, LoopServices, run_loop
from cleanroom.harness.report_step import print_report
from cleanroom.isolation.tests_observation_privacy import DURATION_S
from cleanroom.reports.model import RunReport
from cleanroom.reports.redteam_section import REDTEAM_FILE
from cleanroom.store.rundb import LeakyControlResult, RunStore
from cleanroom.verifiers.osworld.bundled import bundled_task
from cleanroom.verifiers.osworld.evaluator import TaskRun
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task import load_task
from cleanroom.verifiers.osworld.validate import validate_task
from cleanroom.verify_server.client import Lease

DEMO_ENVS = 3
DEMO_TRIALS_SCALE = 0.1  # every test at about a tenth of its window trials, at least one
DEMO_OBSERVATION_S = 20.0  # observation_privacy's watch (120 s in a full window)
PLANTED_LEAK = "planted: a token delivered through another environment's lease"
RENAME_ORACLE = "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2"
# A few tests under the leaks they name, one pool per leak: what fits in a few minutes.
LEAKY_TESTS = ("clipboard", "files_and_prefs", "token_sweep", "channels")
LEAKY_KINDS = (Leak.SHARED_CLIPBOARD, Leak.SHARED_HOME, Leak.OPEN_HOST)


@dataclass
class DemoResult:
    """What the demo did, for the summary and for tests."""

    run_dir: Path
    loop: LoopResult | None = None
    validation: str = ""
    audit_control_fired: bool | None = None
    leaky: list[str] = field(default_factory=list)
    redteam: str = ""
    report: RunReport | None = None


def demo_config(run_dir: Path) -> LoopConfig:
    """The embedded defaults: three environments, one short window, every test reduced."""
    return LoopConfig(
        run_dir=run_dir,
        envs=DEMO_ENVS,
        windows=1,
        window_minutes=0.0,
        trials_scale=DEMO_TRIALS_SCALE,
        on_demand=True,
        job="demo",
        observation_s=DEMO_OBSERVATION_S,
    )


def run_demo(run_dir: Path, console: Console | None = None) -> DemoResult:
    """Run the demo into ``run_dir`` (created), print its report and return what it did."""
    console = console or Console()
    result = DemoResult(run_dir)
    started = time.monotonic()
    result.loop = run_loop(
        demo_config(run_dir),
        console,
        before_windows=[
            lambda s: _audit_control(s, result),
            lambda s: _osworld_rename(s, result),
        ],
        after_windows=[lambda s: _leaky_controls(s, result), lambda s: _redteam(s, result)],
    )
    elapsed = time.monotonic() - started
    console.rule("Report")
    result.report, _ = print_report(run_dir, console)
    _summary(result, console, elapsed)
    return result


# -- the audit's control ---------------------------------------------------------------


def _audit_control(s: LoopServices, result: DemoResult) -> None:
    s.progress.step("the audit's control: env02's token through env01's lease, on purpose")
    with s.verify_server.client(timeout=15.0) as client:
        tokens = {
            env: _start(s.store, env, seq)
            for seq, env in enumerate(("env01", "env02", "env03"), start=1)
        }
        leases = {env: client.lease(t, env=env) for env, t in tokens.items()}
        _submit(leases["env01"], str(tokens["env01"]))
        _submit(leases["env01"], str(tokens["env02"]))  # the planted leak
        for env, token in tokens.items():
            _finish(s.store, token, "verify_server", client.verify_form(leases[env]))
        leased = [LeasedRollout(env, t.rollout_id) for env, t in tokens.items()]
        # Its rows are the control's, never part of the published number; the rollouts
        # it names are invalid like any others.
        audit = read_audit(client, CONTROL_WINDOW, leased)
        invalidated = invalidate_named(s.store, audit.cross)
    fired = bool(audit.cross) and not audit.error
    result.audit_control_fired = fired
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


def _start(store: RunStore, env: str, seq: int, task: str = "form:planted-leak") -> Token:
    token = mint(RolloutId(env, CONTROL_WINDOW, seq))
    store.start_rollout(token, task)
    return token


def _finish(store: RunStore, token: Token, verifier: str, outcome: Outcome) -> None:
    store.add_verifier_result(token.rollout_id, verifier, outcome)
    store.finish_rollout(token.rollout_id, outcome)


def _submit(lease: Lease, text: str) -> None:
    """What a browser does when the form is filled in: a form-encoded POST to the lease."""
    response = httpx.post(lease.form_url, data={"token": text}, timeout=10, trust_env=False)
    response.raise_for_status()


# -- the OSWorld rename task in local guests -------------------------------------------


def _osworld_rename(s: LoopServices, result: DemoResult) -> None:
    s.progress.step("OSWorld rename task: validate the checker, then an honest and a no-op run")
    task = load_task(bundled_task())
    settings = CheckSettings(getter_timeout=30, step_timeout=30)
    with tempfile.TemporaryDirectory(prefix="cleanroom-demo-") as tmp:
        work = Path(tmp)
        base = LocalGuest(home=str(work / "template-home"))
        try:
            validation = validate_task(task, base, RENAME_ORACLE, settings, action_timeout=30)
        finally:
            base.close()
        result.validation = validation.verdict
        s.progress.event(
            f"OSWorld rename checker validation: {validation.verdict} "
            "(fails at t=0, passes after the oracle, fails after no action)"
        )
        for env, seq, act in (("env01", 4, True), ("env03", 5, False)):
            token = _start(s.store, env, seq, "osworld:rename")
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
            _finish(s.store, token, "osworld", outcome)
            s.progress.event(f"osworld:rename {'honest' if act else 'no-op'}: {outcome.status}")


# -- leaky controls and the red team ---------------------------------------------------


def _leaky_controls(s: LoopServices, result: DemoResult) -> None:
    # The deliberate-fault setups belong to the full matrix (`cleanroom isolation controls`).
    result.leaky = leaky_controls(s, LEAKY_TESTS, leaks=LEAKY_KINDS, faults=False)


def _redteam(s: LoopServices, result: DemoResult) -> None:
    from cleanroom.redteam.catalogue import ATTACKS
    from cleanroom.redteam.runner import example_tasks, plan_rows, run_matrix
    from cleanroom.verifiers.container.docker_runtime import DockerRuntime, RuntimeUnavailable

    s.progress.step("container red-team matrix: every attack against every verifier mode")
    try:
        runtime = DockerRuntime.connect()
    except RuntimeUnavailable as exc:  # said on screen and in the report: no matrix, no claim
        result.redteam = f"not run: Docker is unavailable ({exc})"
        s.progress.event(f"[red]red team {result.redteam}[/]")
        return
    tasks = example_tasks()
    matrix = run_matrix(tasks, plan_rows(tasks, ATTACKS, targeted=True), runtime, jobs=2)
    (s.store.run_dir / REDTEAM_FILE).write_text(json.dumps(matrix.to_json(), default=str))
    result.redteam = matrix.summary().line()
    s.progress.event(f"red team: {result.redteam}")


# -- the summary -----------------------------------------------------------------------


def _summary(result: DemoResult, console: Console, elapsed: float) -> None:
    console.rule("Demo summary")
    loop = result.loop
    if loop is not None:
        console.print(f"Run {loop.status} in {elapsed:.0f} s: {result.run_dir}")
        if loop.error:
            console.print(f"[red]{loop.error}[/] (traceback in the run folder)")
        tests = ", ".join(f"{p.name} x{p.trials}" for p in loop.plan) or "none registered"
        console.print(f"Isolation tests in the window: {tests}")
        console.print(
            f"observation_privacy watched for {DEMO_OBSERVATION_S:g} s "
            f"({DURATION_S:g} s in a full window)"
        )
    console.print(f"OSWorld rename checker validation: [bold]{result.validation or 'not run'}[/]")
    audit = {True: "fired", False: "DID NOT FIRE", None: "not run"}[result.audit_control_fired]
    console.print(f"Audit control (planted leak through another lease): {audit}")
    console.print("Leaky controls: " + ("; ".join(result.leaky) or "not run"))
    console.print(f"Red team: {result.redteam or 'not run'}")
    report = result.report
    if report is not None:
        verdict = report.to_json()["isolation"]
        if verdict["published"]:
            console.print(f"[bold green]Isolation:[/] {verdict['text']}")
        else:
            console.print(f"[bold red]Isolation number refused:[/] {verdict['reason']}")
    console.print(f"Full report: cleanroom report {result.run_dir} --html FILE")
