"""The main job on the embedded defaults: every capability, end to end, in a few minutes.

One run folder, one run database, the harness loop (`loop`) sized for a 2-core machine:

1. a verify server in its own process, and a pool of three environments plus the
   canary ``env00`` (watched throughout);
2. the positive control (two Writers in one session);
3. the real OSWorld rename task's checker validated in local guests (fails at t=0,
   passes after the oracle, fails after no action), then an honest and a no-op rollout;
4. one short window: smoke rollouts on every acting environment, every isolation test
   at reduced trials (observation privacy watching for 20 s, not 120 s), the audit and
   the canary verdict;
5. the run's own controls (`own_controls`), so that every check the window counted is
   proven in this run: the canary's and the audit's planted leaks (the audit's: env02's
   token delivered through env01's lease on purpose; the rollouts it names become
   invalid, never rows of the number), and every test under one leaky setup or fault
   that it must detect, each on a pool with one protection removed;
6. the container red-team matrix (saved as ``redteam.json`` for the report), beside
   step 5: it needs only Docker, and the controls only the desktop;
7. the report: text on screen, ``report.html`` in the run folder; its number says it
   was measured at 0.1x the planned trials.
"""

from __future__ import annotations

import json
import shlex
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from cleanroom.core.isolation import CONTROL_WINDOW
from cleanroom.core.outcomes import Outcome
from cleanroom.core.tokens import RolloutId, Token, mint
from cleanroom.guests.local import LocalGuest
from cleanroom.harness.form_audit_rows import AUDIT_TEST
from cleanroom.harness.loop import LoopResult, LoopServices, run_loop
from cleanroom.harness.own_controls import leaky_controls
from cleanroom.harness.report_step import print_report
from cleanroom.harness.settings import LoopConfig
from cleanroom.isolation.checks.observation_privacy import DURATION_S
from cleanroom.reports.model import RunReport
from cleanroom.reports.redteam_section import REDTEAM_FILE
from cleanroom.store.rundb import RunStore
from cleanroom.verifiers.osworld.bundled import bundled_task
from cleanroom.verifiers.osworld.evaluator import TaskRun
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task import load_task
from cleanroom.verifiers.osworld.validate import validate_task

DEMO_ENVS = 3
DEMO_TRIALS_SCALE = 0.1  # every test at about a tenth of its window trials, at least one
DEMO_OBSERVATION_S = 20.0  # observation_privacy's watch (120 s in a full window)
RENAME_ORACLE = "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2"


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
    # The red-team matrix needs only Docker, the controls only the desktops: side by side.
    both = _side_by_side(lambda s: _leaky_controls(s, result), lambda s: _redteam(s, result))
    result.loop = run_loop(
        demo_config(run_dir),
        console,
        before_windows=[lambda s: _osworld_rename(s, result)],
        after_windows=[both],
    )
    elapsed = time.monotonic() - started
    console.rule("Report")
    result.report, _ = print_report(run_dir, console)
    _summary(result, console, elapsed)
    return result


def _start(store: RunStore, env: str, seq: int, task: str) -> Token:
    token = mint(RolloutId(env, CONTROL_WINDOW, seq))
    store.start_rollout(token, task)
    return token


def _finish(store: RunStore, token: Token, verifier: str, outcome: Outcome) -> None:
    store.add_verifier_result(token.rollout_id, verifier, outcome)
    store.finish_rollout(token.rollout_id, outcome)


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


def _side_by_side(
    step: Callable[[LoopServices], None], beside: Callable[[LoopServices], None]
) -> Callable[[LoopServices], None]:
    """One step that runs ``step`` on the loop's thread and ``beside`` in a thread of its
    own, and returns once both have ended, whichever raised: the other's work is never
    lost. What ``step`` raised is raised first; otherwise what ``beside`` raised."""

    def both(s: LoopServices) -> None:
        raised: list[BaseException] = []

        def run() -> None:
            try:
                beside(s)
            except BaseException as exc:  # raised on the loop's thread, below
                raised.append(exc)

        thread = threading.Thread(target=run, name="beside", daemon=True)
        thread.start()
        try:
            step(s)
        finally:
            thread.join()
        if raised:
            raise raised[0]

    return both


def _leaky_controls(s: LoopServices, result: DemoResult) -> None:
    # Every check the window ran is proven here, or the number is refused.
    result.leaky = leaky_controls(s, [p.name for p in s.plan])
    audit = [c for c in s.store.leaky_controls() if c.test == AUDIT_TEST]
    result.audit_control_fired = audit[-1].fired if audit else None


def _redteam(s: LoopServices, result: DemoResult) -> None:
    from cleanroom.redteam.catalogue import ATTACKS
    from cleanroom.redteam.run_matrix import example_tasks, plan_rows, run_matrix
    from cleanroom.verifiers.container.runtime import RuntimeUnavailable
    from cleanroom.verifiers.container.runtime.docker import DockerRuntime

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
