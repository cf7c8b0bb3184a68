"""The harness loop behind ``cleanroom run``, ``cleanroom soak`` and ``cleanroom demo``.

It creates the run folder and database (with the machine), starts the verify server and
an in-process pool (the canary ``env00`` plus the acting environments), a watchdog, the
parked console in env00 (or records why it is not active) and the canary watcher, runs
the positive control, then window after window (`window`), and one more token sweep in
the last window once they are over (`end_of_run_sweep`), before any step that plants
foreign tokens on purpose.

Stopping: SIGINT and SIGTERM end the loop at once (`stopping`); the pool, the watchdog,
the watcher and the verify server are stopped, and the run database is reopened as its
owner, which marks every rollout and window left unfinished as interrupted. Whatever
way the loop ends, `cleanroom report` can read the run.
"""

from __future__ import annotations

import secrets
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Console

from cleanroom.core.canary import CANARY_ENV, PARKED_CONSOLE_TEST
from cleanroom.core.isolation import judge_window
from cleanroom.environments.interface import Desktops, require
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.providers import (
    CANARY_CPU_SHARES,
    RECORDS_DIR,
    PoolConfig,
    collect_garbage,
    open_pool,
)
from cleanroom.environments.watchdog import Watchdog
from cleanroom.harness.plan import PlannedCheck, plan_tests
from cleanroom.harness.progress import LoopProgress
from cleanroom.harness.settings import LoopConfig, OutsideAgentSettings
from cleanroom.harness.smoke import Gate, SmokeRunner
from cleanroom.harness.stopping import StopRequested, stop_on_signals
from cleanroom.harness.window import (
    WindowPlan,
    WindowResult,
    WindowServices,
    run_window,
    sweep_window,
)
from cleanroom.isolation.battery import IsolationCheck
from cleanroom.isolation.canary.parked_console import ParkedConsole
from cleanroom.isolation.canary.watcher import CanaryWatcher
from cleanroom.isolation.checks import CHECKS, observing_for
from cleanroom.isolation.controls.positive import run_and_store_control
from cleanroom.reports.machine import limits_info, machine_info
from cleanroom.rollouts.base import SmokeTask
from cleanroom.rollouts.osworld_http import build_osworld_app, read_connection, serving
from cleanroom.rollouts.osworld_outside import OUTSIDE_TASK, OutsideAgents, write_connection
from cleanroom.rollouts.osworld_vm_server import build_vm_server_app, serving_vm_server
from cleanroom.rollouts.registry import VerifySupplier
from cleanroom.store.rundb import RunStore, WatchRecord
from cleanroom.verify_server.process import VerifyServerProcess

HARNESS_ERROR = "harness-error.txt"
CONTROL_ATTEMPTS = 3


@dataclass
class LoopServices:
    """The run's live parts, for steps that run before or after the windows."""

    config: LoopConfig
    store: RunStore
    pool: Desktops
    verify_server: VerifyServerProcess
    progress: LoopProgress
    console: Console
    stopping: threading.Event
    plan: list[PlannedCheck] = field(default_factory=list)  # the tests each window runs
    parked: ParkedConsole | None = None  # the parked console, when it could start


Step = Callable[[LoopServices], None]


@dataclass
class LoopResult:
    """How the loop ended: ``finished``, ``interrupted`` or ``failed``."""

    run_dir: Path
    status: str = "running"
    windows: list[WindowResult] = field(default_factory=list)
    plan: list[PlannedCheck] = field(default_factory=list)
    error: str | None = None
    exit_code: int = 0


def load_battery() -> dict[str, IsolationCheck]:
    """The isolation checks of the one table (`isolation.checks.CHECKS`), as a copy the
    caller may adjust."""
    return dict(CHECKS)


def pool_config(config: LoopConfig) -> PoolConfig:
    """The pool ``config``'s run starts."""
    return PoolConfig(
        envs=config.envs,
        root=config.pool_root,
        warm_standby=config.warm_standby,
        screen=config.screen_size(),
    )


def battery_and_plan(config: LoopConfig) -> tuple[dict[str, IsolationCheck], list[PlannedCheck]]:
    """The checks ``config``'s windows run (observing for ``observation_s`` when set) and
    how many trials of each; an unknown check raises `UnknownCheck`, and a check its
    pool's provider cannot run raises `Unsupported`, before anything starts."""
    battery = load_battery()
    if config.observation_s is not None:
        battery = {n: observing_for(t, config.observation_s) for n, t in battery.items()}
    plan = plan_tests(
        battery.values(),
        soak=config.soak,
        scale=config.trials_scale,
        chosen=config.tests,
        on_demand=config.on_demand,
    )
    pool = pool_config(config)
    for planned in plan:
        require(pool.provider, pool.capabilities, battery[planned.name].requires)
    return battery, plan


def run_machine_info() -> dict[str, str]:
    """The machine a run's record names: its software, and the limits its pools use."""
    defaults = PoolConfig()
    return {
        **machine_info(),
        **limits_info(defaults.limits, CANARY_CPU_SHARES, defaults.harness_reserve_mib),
    }


def run_loop(
    config: LoopConfig,
    console: Console,
    *,
    before_windows: Sequence[Step] = (),
    after_windows: Sequence[Step] = (),
) -> LoopResult:
    """Run the loop into ``config.run_dir`` (created); never raises for a stop signal."""
    battery, plan = battery_and_plan(config)
    meta = {
        "job": config.job,
        "machine": run_machine_info(),
        "config": config.model_dump(mode="json"),
        "tests": {p.name: p.trials for p in plan},
    }
    store = RunStore.create(config.run_dir, meta=meta)
    result = LoopResult(store.run_dir, plan=plan)
    stopping = threading.Event()
    with stop_on_signals(stopping), LoopProgress(console) as progress:
        progress.state.windows = config.windows
        progress.follow_rows(store.row_counts)
        stack = ExitStack()
        try:
            services = start_services(config, store, stack, progress, console, stopping)
            services.plan = plan
            run_positive_control(services)
            for step in before_windows:
                step(services)
            result.windows = _windows(services, battery, plan)
            for step in after_windows:
                step(services)
            result.status = "finished"
        except StopRequested as stop:
            result.status, result.exit_code = "interrupted", stop.exit_code
            progress.event(f"[bold red]{stop.signal_name}[/]: stopping cleanly")
        except Exception as exc:  # the run is recorded as failed, with the traceback
            result.status, result.exit_code = "failed", 1
            result.error = f"{type(exc).__name__}: {exc}"
            (store.run_dir / HARNESS_ERROR).write_text(traceback.format_exc())
            progress.event(f"[bold red]harness fault[/]: {result.error}")
        finally:
            stopping.set()  # from here on, signals are ignored until clean-up is done
            progress.step("stopping the pool and the verify server")
            stack.close()
            progress.follow_rows(None)  # the store is about to close
            store.end(result.status)
    return result


def start_services(
    config: LoopConfig,
    store: RunStore,
    stack: ExitStack,
    progress: LoopProgress,
    console: Console,
    stopping: threading.Event,
) -> LoopServices:
    """Start the run's verify server, pool, watchdog and parked console; each is stopped
    when ``stack`` closes."""
    remove_dead_runs(progress.step, progress.event, config.pool_root)
    progress.step("starting the verify server")
    server = VerifyServerProcess.start(store.run_dir / "verify-server")
    stack.callback(server.stop)
    progress.event(f"verify server on {server.url}")
    progress.step(f"starting the pool: {CANARY_ENV} (canary) and {config.envs} environment(s)")
    pool = open_pool(pool_config(config), store.run_dir, store)
    stack.callback(pool.stop)  # registered first: a half-started pool is undone too
    pool.start()
    watchdog = Watchdog(pool)
    watchdog.start()
    stack.callback(watchdog.stop)
    progress.event(
        f"pool {pool.describe().get('pool_id', pool.provider)} ready: {', '.join(pool.names)}"
    )
    services = LoopServices(config, store, pool, server, progress, console, stopping)
    services.parked = _parked_console(pool, store, progress)
    if services.parked is not None:
        stack.callback(services.parked.stop)
    return services


def remove_dead_runs(
    step: Callable[[str], None],
    event: Callable[[str], None],
    pools_root: Path,
    records_dir: Path = RECORDS_DIR,
) -> None:
    """Remove what runs and pools whose owner process died left behind (a run killed
    with SIGKILL leaves its pool's users, displays and programs), as `cleanroom envs gc`
    does, and say what was removed. Pools whose owner lives (another run, a supervisor
    started with `cleanroom envs up`) stay."""
    step("removing what dead runs left behind")
    for line in collect_garbage(records_dir, pools_root).lines():
        event(f"a dead run's {line}")


def _parked_console(
    pool: Desktops, store: RunStore, progress: LoopProgress
) -> ParkedConsole | None:
    """Start the parked console in env00; one that cannot start is recorded as not
    active, with why, and nothing is claimed for it."""
    progress.step("starting the parked console in env00")
    try:
        parked = ParkedConsole.start(pool)
    except Exception as exc:  # any reason it cannot start is said, never a silent absence
        why = f"{type(exc).__name__}: {exc}"
        store.set_watch(WatchRecord(PARKED_CONSOLE_TEST, False, why))
        progress.event(f"[red]parked console: not active[/] ({why})")
        return None
    store.set_watch(WatchRecord(PARKED_CONSOLE_TEST, True))
    progress.event("parked console: active in env00")
    return parked


def run_positive_control(s: LoopServices) -> None:
    """Run the control and store it; a control that cannot run is said, never a zero.

    A control that could not run (a save that timed out on a loaded machine) told
    nothing: it is tried again, up to `CONTROL_ATTEMPTS` times in all. A control that ran
    and did not fire is stored as it is.
    """
    c = s.config.control
    for attempt in range(1, CONTROL_ATTEMPTS + 1):
        s.progress.step(f"positive control: two Writers in one session (attempt {attempt})")
        try:
            result = run_and_store_control(
                s.store,
                typing_rounds=c.typing_rounds,
                chars=c.chars,
                clipboard_trials=c.clipboard_trials,
            )
        except Exception as exc:  # not a result: without one the report refuses the number
            name = f"control-error-{attempt}.txt"
            (s.store.run_dir / name).write_text(traceback.format_exc())
            s.progress.event(
                f"[red]positive control could not run[/]: {type(exc).__name__}: {exc} ({name})"
            )
            continue
        verdict = "[green]fired[/]" if result.fired else "[red]did not fire[/]"
        s.progress.event(
            f"positive control {verdict}: typing {result.typing_cross} of "
            f"{result.typing_trials}, clipboard {result.clipboard_cross} of "
            f"{result.clipboard_trials}"
        )
        return


def _windows(
    s: LoopServices, battery: dict[str, IsolationCheck], plan: list[PlannedCheck]
) -> list[WindowResult]:
    config = s.config
    with ExitStack() as stack:
        services = window_services(s, battery, stack)
        deadline = None if config.hours is None else time.monotonic() + config.hours * 3600
        results = []
        index = 1
        while True:
            if config.windows is not None and index > config.windows:
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            window = WindowPlan(index, config.tasks, plan, config.window_minutes)
            results.append(run_window(services, window))
            index += 1
        if results:
            results[-1] = end_of_run_sweep(services, results[-1])
        return results


def window_services(
    s: LoopServices, battery: dict[str, IsolationCheck], stack: ExitStack
) -> WindowServices:
    """What windows use, started: the canary watcher (after its baseline look at env00)
    and the smoke runner; each is stopped when ``stack`` closes."""
    canary = CanaryWatcher(LocalHandle(s.pool, CANARY_ENV), s.store, console=s.parked)
    canary.sample_once()  # the baseline: env00 as it was before the first window
    canary.start()
    stack.callback(canary.stop)
    tasks, gates = _outside_agents(s, stack) if OUTSIDE_TASK in s.config.tasks else ({}, {})
    smoke = SmokeRunner(
        s.pool,
        s.store,
        s.verify_server.client(timeout=15.0),
        s.stopping,
        on_done=lambda r: s.progress.rollout_done(
            r.outcome is None or r.outcome.reason is not None
        ),
        tasks=tasks,
        gates=gates,
    )
    stack.callback(smoke.verify.close)
    return WindowServices(
        s.pool,
        s.store,
        smoke.verify,
        canary,
        smoke,
        battery,
        s.progress,
        s.stopping,
        s.verify_server.db,
    )


def _outside_agents(
    s: LoopServices, stack: ExitStack
) -> tuple[dict[str, Callable[[VerifySupplier], SmokeTask]], dict[str, Gate]]:
    """The task and the gate that make an outside agent's episode a rollout, with the
    interfaces served for the rest of the run."""
    agents, path = serve_outside_agents(
        s.pool, s.store.run_dir, s.config.outside_agents, s.stopping, stack
    )
    url = read_connection(path).url
    s.progress.event(f"OSWorld interface for outside agents on {url} (keys: {path.name})")
    return {OUTSIDE_TASK: agents.task}, {OUTSIDE_TASK: agents.gate}


def serve_outside_agents(
    pool: Desktops,
    run_dir: Path,
    settings: OutsideAgentSettings,
    stopping: threading.Event,
    stack: ExitStack,
) -> tuple[OutsideAgents, Path]:
    """Serve OSWorld's interface for outside agents (`osworld_http`) and an equivalent of
    OSWorld's in-VM server (`osworld_vm_server`, what ``http://{vm_ip}:5000`` reaches,
    over each agent's current episode) until ``stack`` closes, and write the connection
    file into ``run_dir``: the URL, each environment's own key (which opens both servers
    for that environment alone), the in-VM server's address and the screens' size."""
    agents = OutsideAgents(
        pool,
        action_space=settings.action_space,
        wait_s=settings.wait_s,
        episode_s=settings.episode_s,
        stopping=stopping,
        require_a11y_tree=settings.a11y_tree,
    )
    key = secrets.token_hex(32)
    url = stack.enter_context(serving(build_osworld_app(agents, key), settings.port, settings.host))
    vm_app = build_vm_server_app(agents.controller, key, episode_over=agents.episode_over)
    vm_address = stack.enter_context(serving_vm_server(vm_app))
    acting = [n for n in pool.names if n != CANARY_ENV]
    screen = pool.screen_size(acting[0])
    path = write_connection(
        run_dir, url, key, acting, vm_address=vm_address, screen=(screen.width, screen.height)
    )
    return agents, path


def end_of_run_sweep(s: WindowServices, last: WindowResult) -> WindowResult:
    """Sweep once more in the last window after it closed: a token that reached a place
    of another environment after the window's own sweep still fails that window (its
    status becomes ``failed``) and makes its rollouts invalid."""
    s.progress.step("token sweep at the end of the run")
    sweep_window(s, last.trials, 1, "at the end of the run")
    verdict = judge_window(last.index, s.store.isolation_rows(last.index))
    if not verdict.failed or last.status == "failed":
        return replace(last, verdict=verdict)
    s.store.fail_window(last.index)
    s.progress.step(f"window {last.index} failed after its close: {verdict.failure}")
    return replace(last, status="failed", verdict=verdict)
