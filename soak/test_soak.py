"""The long run: ``cleanroom soak`` for hours on real parts, watched from outside.

Not part of ``make test`` (it runs for an hour by default): ``make soak`` runs it.
Settings come from the environment:

    CLEANROOM_SOAK_HOURS            how long the soak runs (default 1)
    CLEANROOM_SOAK_ENVS             acting environments beside the canary (default 3)
    CLEANROOM_SOAK_WINDOW_MINUTES   window length (default 15)
    CLEANROOM_SOAK_RUN              run folder to create (default runs/soak-test-<time>)
    CLEANROOM_SOAK_CHECK            check a soak run folder made earlier; run nothing

While the soak runs, the test samples every 30 s the harness's memory and open files
and the number of processes each environment user runs (``soak-resources.jsonl`` in
the run folder). Afterwards it checks that the run is whole: every window judged,
every rollout finished with an outcome, invalid ones with a reason, the soak's trial
counts used, the control stored, the report's verdict consistent with the windows,
every planned test proven by a leaky setup or its fault after the windows, nothing left
running, no stale action applied, and no steady growth of memory, files or processes.
``soak-summary.json`` in the run folder holds the figures.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cleanroom.core.isolation import CONTROL_WINDOW
from cleanroom.core.outcomes import Status
from cleanroom.environments.interface import read_action_log
from cleanroom.environments.pool.plan import STANDBY_SLOT
from cleanroom.harness.loop import load_battery
from cleanroom.harness.plan import plan_tests
from cleanroom.store.rundb import DB_NAME, RunStore

CLI = Path(sys.executable).with_name("cleanroom")
REPO = Path(__file__).resolve().parents[1]
HOURS = float(os.environ.get("CLEANROOM_SOAK_HOURS", "1"))
ENVS = int(os.environ.get("CLEANROOM_SOAK_ENVS", "3"))
WINDOW_MINUTES = float(os.environ.get("CLEANROOM_SOAK_WINDOW_MINUTES", "15"))
SAMPLE_S = 30.0
# A window that starts just before the deadline still runs to its end, and the start
# (pool, control) and the end (audit, report) come on top.
TIMEOUT_S = int(HOURS * 3600 + WINDOW_MINUTES * 60 * 2 + 1800)


def _run_dir() -> Path:
    given = os.environ.get("CLEANROOM_SOAK_RUN")
    if given:
        return Path(given)
    return REPO / "runs" / time.strftime("soak-test-%Y%m%d-%H%M%S")


def _env_users(run: Path) -> list[str]:
    """Every environment's user and, with warm standby, its spare slot's user: a spare's
    processes count as the environment's."""
    if not (run / DB_NAME).exists():
        return []
    try:
        with RunStore.open(run, owner=False) as store:
            users = [e.unix_user for e in store.environments() if e.unix_user]
    except Exception:  # the database is still being created
        return []
    slots = [u.removesuffix(STANDBY_SLOT) for u in users]
    return sorted({u for s in slots for u in (s, s + STANDBY_SLOT)})


def _processes_by_user(users: list[str]) -> dict[str, int]:
    out = subprocess.run(
        ["ps", "-eo", "user:40", "--no-headers"], capture_output=True, text=True
    ).stdout
    counts = Counter(line.strip() for line in out.splitlines())
    return {u: counts.get(u, 0) for u in users}


def _harness_resources(pid: int) -> dict[str, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
    return {"rss_kb": rss_kb, "fds": len(os.listdir(f"/proc/{pid}/fd"))}


def _sample(proc: subprocess.Popen[bytes], run: Path, log: Path, started: float) -> None:
    users = _env_users(run)
    try:
        harness = _harness_resources(proc.pid)
    except (FileNotFoundError, ProcessLookupError, StopIteration):
        return  # the harness is ending
    sample = {"t": round(time.monotonic() - started, 1), "at": time.time(), **harness,
              "processes": _processes_by_user(users)}  # fmt: skip
    with log.open("a") as f:
        f.write(json.dumps(sample) + "\n")


def _quarters(values: list[float]) -> tuple[float, float]:
    """Median of the first and of the last quarter of a series."""
    q = max(1, len(values) // 4)
    return statistics.median(values[:q]), statistics.median(values[-q:])


@pytest.mark.timeout(TIMEOUT_S)
def test_a_soak_runs_for_hours_and_leaves_a_whole_run() -> None:
    checked = os.environ.get("CLEANROOM_SOAK_CHECK")
    if checked:  # check a soak that already ran (its folder holds the samples)
        run = Path(checked)
        elapsed = float(json.loads((run / "soak-summary.json").read_text())["wall_s"])
    else:
        run, elapsed = _soak()
    _check(run, elapsed)


def _soak() -> tuple[Path, float]:
    run = _run_dir()
    run.parent.mkdir(parents=True, exist_ok=True)
    resources = run.parent / f"{run.name}-resources.jsonl"
    argv = [str(CLI), "soak", "--hours", str(HOURS), "--envs", str(ENVS),
            "--window-minutes", str(WINDOW_MINUTES), "--run", str(run)]  # fmt: skip
    started = time.monotonic()
    with (run.parent / f"{run.name}-console.txt").open("wb") as console:
        proc = subprocess.Popen(argv, stdout=console, stderr=subprocess.STDOUT)
        try:
            while proc.poll() is None:
                _sample(proc, run, resources, started)
                time.sleep(SAMPLE_S)
                assert time.monotonic() - started < TIMEOUT_S - 60, "the soak overran"
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=300)
    elapsed = time.monotonic() - started
    resources.rename(run / "soak-resources.jsonl")
    (run.parent / f"{run.name}-console.txt").rename(run / "soak-console.txt")
    assert proc.returncode == 0, (run / "soak-console.txt").read_text()[-5000:]
    (run / "soak-summary.json").write_text(json.dumps({"wall_s": round(elapsed)}))
    return run, elapsed


def _check(run: Path, elapsed: float) -> None:
    """Everything the soak must leave behind; figures go to ``soak-summary.json``."""
    with RunStore.open(run) as store:
        info = store.run_info()
        config = info["meta"]["config"]
        summary: dict[str, Any] = {"hours": config["hours"], "envs": config["envs"],
                                   "window_minutes": config["window_minutes"],
                                   "wall_s": round(elapsed)}  # fmt: skip
        assert info["status"] == "finished"
        assert info["meta"]["job"] == "soak"
        # The soak's trial counts, not the per-window ones.
        expected = {p.name: p.trials for p in plan_tests(load_battery().values(), soak=True)}
        assert info["meta"]["tests"] == expected

        windows = store.windows()
        assert len(windows) >= max(1, math.floor(config["hours"] * 60 / config["window_minutes"]))
        statuses = Counter(store.window_status(w.index) for w in windows)
        assert set(statuses) <= {"closed", "failed"}, statuses
        assert all(w.ended_at is not None for w in windows)
        rows = store.isolation_rows()
        # The measured windows' rollouts; the control window holds the audit's planted ones.
        rollouts = [r for r in store.rollouts() if r.window != CONTROL_WINDOW]
        for w in windows:
            mine = {r.test for r in rows if r.window == w.index}
            assert {"canaries", *expected} <= mine, (w.index, mine)
            if any(r.task == "form" for r in rollouts if r.window == w.index):
                assert "form_audit" in mine, (w.index, mine)  # leases were given: audited

        assert rollouts and all(r.finished for r in rollouts)
        invalid = [r for r in rollouts if r.outcome is Status.INVALID]
        assert all(r.reason is not None for r in invalid)
        succeeded = {r.task for r in rollouts if r.outcome is Status.SUCCESS}
        assert succeeded == {r.task for r in rollouts}, "a task never succeeded in hours"
        assert store.control_results(), "the positive control was never stored"
        summary.update(
            windows=dict(statuses),
            rollouts=len(rollouts),
            outcomes=dict(Counter(r.outcome.value if r.outcome else "none" for r in rollouts)),
            invalid_reasons=dict(Counter(r.reason.value for r in invalid if r.reason)),
            rows=dict((k.value, v) for k, v in store.row_counts().items()),
            control_fired=store.control_results()[-1].fired,
        )
        # What proving the number costs: the token sweep at every window's close, and the
        # run's own controls after the last window (to the run's end), against the
        # windows' own time.
        window_s = sum((w.ended_at or w.started_at) - w.started_at for w in windows)
        sweeps = [
            json.loads(f.read_text())["seconds"]
            for f in (run / "evidence" / "token_sweep").glob("*/sweep.json")
        ]
        controls_s = (info["ended_at"] or time.time()) - max(w.ended_at or 0.0 for w in windows)
        # Each reset sweeps its environment first; those sweeps are timed as latencies.
        wipes = [s.ms / 1000 for s in store.latency_samples() if s.phase == "before wipe"]
        summary.update(
            sweep_s=round(sum(sweeps) + sum(wipes), 2),
            sweeps=len(sweeps),
            sweeps_before_a_wipe=len(wipes),
            sweep_share=round((sum(sweeps) + sum(wipes)) / window_s, 5),
            controls_s=round(controls_s),
            controls_share=round(controls_s / window_s, 4),
        )

    report = subprocess.run(
        [str(CLI), "report", str(run), "--json"], capture_output=True, text=True, timeout=300
    )
    data = json.loads(report.stdout)
    verdict = data["isolation"]
    summary["isolation"] = verdict.get("text") or verdict.get("reason")
    if statuses.get("failed"):  # a failed window is never folded into a published number
        assert not verdict["published"] and verdict["failed_windows"]
    if verdict["published"]:
        control = data["positive_control"][-1]
        assert report.returncode == 0 and control["typing_cross"] and control["clipboard_cross"]
    else:
        assert report.returncode == 1 and verdict["reason"]
    # The soak ran every planned test under its leaks and faults: each must have fired.
    proven = data["proven_by_leaky_control"]
    summary["proven_by"] = {t: proven.get(t, []) for t in ("canaries", *expected)}
    assert all(summary["proven_by"].values()), summary["proven_by"]

    # Nothing applied at an old generation, in hours of resets (a reset's own record
    # names the generation it ended and the one it began).
    log = read_action_log(run / "actions.jsonl")
    stale = [
        e for e in log
        if e.outcome == "applied" and e.kind not in ("reset", "recover")
        and e.generation != e.current
    ]  # fmt: skip
    assert not stale, stale[:5]
    summary["actions"] = dict(Counter(e.outcome for e in log))

    # No steady growth: the last quarter's median against the first quarter's.
    # Only samples taken while the windows ran: the start-up's growth is not a leak, and
    # the leaky controls afterwards run pools of their own.
    lines = (run / "soak-resources.jsonl").read_text().splitlines()
    span = (windows[0].started_at, max(w.ended_at or 0.0 for w in windows))
    samples = [s for s in map(json.loads, lines) if span[0] <= s["at"] <= span[1]]
    assert len(samples) >= 4, "too few resource samples"
    rss = _quarters([s["rss_kb"] for s in samples])
    fds = _quarters([s["fds"] for s in samples])
    procs = _quarters([sum(s["processes"].values()) for s in samples])
    summary["harness_rss_mb"] = [round(v / 1024) for v in rss]
    summary["harness_fds"] = list(fds)
    summary["env_processes"] = list(procs)
    (run / "soak-summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    assert rss[1] <= rss[0] * 1.5 + 50 * 1024, summary
    assert fds[1] <= fds[0] + 50, summary
    assert procs[1] <= procs[0] * 1.5 + 10, summary

    users = _env_users(run)
    assert users and not any(_processes_by_user(users).values()), "processes left running"
