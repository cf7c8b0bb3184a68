"""The driver's merge in a run across nodes: what pulling one window's records from every
node costs the driver, at 1, 10 and 100 simulated nodes, as ratios to one node.

    .venv/bin/python bench/cluster_merge.py [--nodes 1,10,100] [--windows 3]
        [--recording DIR] [--no-write]

Replays recorded rows from many simulated nodes into the driver. Every simulated node has
a run database of its own (`RunStore`, in a temporary folder); for each window, each
node's database gets one window's records, written through the store's own write methods
as a harness writes them (so their ids and change numbers are real, and each window's
rollouts have tokens of their own). Then the driver pulls every node in turn until it is
caught up, as `cleanroom.cluster.driver` does: ``changes_since`` on the node's read-only
connection, ``copy_from_node`` into the driver's database (a fresh run folder), then
``Cursor.after``. That round of pulls is timed, the node-side reads and the driver-side
writes apart: the merge cost of a window. After the last window the bench times one more
round that finds nothing new (while windows run, the driver pulls every node every 2 s,
and each pull sends the small tables whole), then `build_report` on the driver's
database (every node's report and the merged verdict), and reads the database's size.

No Ray: what is timed is the merge at either end, not the transport (serialising a
batch and sending it is left out). The nodes' reads run here, one after the other, on the
driver's machine; on a cluster each runs on its own node.

One node's window comes from ``--recording DIR``: a node's run folder holding run.sqlite,
opened read-only; every record a pull from the start reads of it (`Cursor()`, followed
until it is not full) is one window's records, its windows taken as one. Without it, a
synthetic window, the shape of one node's default window with 3 acting environments and
the canary (``cleanroom run`` at its defaults: one batch of smoke rollouts, then every
scheduled test at its window trial count; `harness.plan.plan_tests` over
`harness.loop.load_battery()`):

- isolation rows, 915 a window. Trials x rows a trial, where the rows a trial are
  read off each check's code for acting environments A = 3 and pool names P = 4:
  clipboard (50 + 1 follow-up after the batch's writer rollout) x A(A-1) = 306;
  keyboard_storm 10 x 6 = 60; modifier_leak 3 x 2 (a Shift and a Ctrl phase, one
  holder-to-typist row each) = 6; dialog_steal 3 x 3 (the opener to the 2 others, and the
  typing row) = 9; observation_privacy 1 x A(P-1) = 9; stale_generation 20 x 1 = 20;
  channels 1 x (9 classes x P(P-1) + 2 reach classes x P + the limits' P(P-1)) = 128;
  noisy_neighbor 1 x (P-1) = 3; the token sweep at the close 1 x P(P-1) = 12; the form
  audit's 2 (only the form rollout holds a lease: its environment from the 2 other
  senders); and one row per look of the canary and of the parked console,
  2 x 180 (a look every 2 s, `core.canary.INTERVAL_S`, over a 360 s window: the harness
  loop benchmark measured this window at 358 s). The sweep before each reset adds rows
  only when it finds something, so none here. That harness loop run stored 862 rows for
  this window on the code of its day, which had 4 channel classes and the limit probe
  fewer, and no noisy_neighbor: 852 by this count;
- canary samples 180 and parked console samples 180 (the same looks);
- latency samples 182: dialog_steal's screenshot timer, 3 trials x 2 bystanders x
  (3 shots before + about 14 rounds while the token is typed and the dialog opens,
  0.2 s apart plus two screenshots of about 40 ms) = 102; noisy_neighbor's,
  3 bystanders x about 19 rounds over 1 s before the hog, the hog (a few seconds) and
  1 s after = 57; and one "before wipe"
  sample per reset, one per rollout and per stale_generation trial = 23 (the fourth soak's
  437 resets for 237 rollouts and 2 x 100 stale trials fit that count). These are the
  least certain figures: they follow from screenshot and dialog times;
- rollouts 3 (one batch, one per acting environment) and their 3 verifier results;
- once per run, with the first window: the positive control (1), the 13 leaky-control
  cells, the 4 environments and the parked console's watch record.

That is 1,463 records of a node's window. A longer window (``cleanroom run
--window-minutes``) runs more batches (3 rollouts, 3 verifier results, 6 follow-up rows
and 3 resets each) and looks every 2 s for its length, so it has more records, about in
proportion to its length; the merge cost per record is what carries over.

The figures go to the ``## Runs across nodes: the driver's merge`` section of
bench/RESULTS.md (``--no-write``: printed only).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cleanroom.core.canary import CanarySample, ConsoleSample
from cleanroom.core.isolation import (
    CANARY_TEST,
    PARKED_CONSOLE_TEST,
    SWEEP_TEST,
    IsolationRow,
    RowResult,
)
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.publish import ControlResult
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.harness.form_audit_rows import AUDIT_TEST
from cleanroom.harness.loop import load_battery
from cleanroom.harness.plan import plan_tests
from cleanroom.reports.model import build_report
from cleanroom.rollouts.registry import TASKS
from cleanroom.store.node_records import APPENDED, Cursor, NodeBatch
from cleanroom.store.rundb import (
    DB_NAME,
    LatencySample,
    LeakyControlResult,
    RunStore,
    WatchRecord,
)
from results_md import write_section

SECTION = "## Runs across nodes: the driver's merge"

# One node's synthetic window: 3 acting environments and the canary, the default window.
ACTING = ("env01", "env02", "env03")
POOL = ("env00", *ACTING)
WINDOW_S = 360.0  # the harness loop benchmark's window with 3 environments: 358 s
LOOKS = 180  # canary and parked console looks: one every 2 s over WINDOW_S
# Isolation rows: test -> (trials in a window, rows a trial).
ISOLATION_ROWS: dict[str, tuple[int, int]] = {
    "clipboard": (51, 6),  # 50 planned + 1 follow-up; every ordered pair of the 3
    "keyboard_storm": (10, 6),
    "modifier_leak": (3, 2),  # Shift and Ctrl phases, one row each
    "dialog_steal": (3, 3),  # the opener to the 2 others, and the typing row
    "observation_privacy": (1, 9),  # 3 page owners x the 3 other screens
    "stale_generation": (20, 1),
    "channels": (1, 128),  # 9 classes x 12 pairs + 2 reach classes x 4 + limits 12
    "noisy_neighbor": (1, 3),  # the hog to each of its 3 bystanders
    SWEEP_TEST: (1, 12),  # at the close: every ordered pair of the 4
    AUDIT_TEST: (1, 2),  # the form rollout's leased environment from the 2 other senders
    CANARY_TEST: (LOOKS, 1),  # one row per look
    PARKED_CONSOLE_TEST: (LOOKS, 1),
}
# Latency samples: (test, phase) -> samples in a window.
LATENCY: dict[tuple[str, str], int] = {
    ("dialog_steal", "before"): 18,  # 3 trials x 2 bystanders x 3 shots
    ("dialog_steal", "during"): 84,  # 3 trials x 2 bystanders x about 14 rounds
    ("noisy_neighbor", "during"): 57,  # 3 bystanders x about 19 rounds
    (SWEEP_TEST, "before wipe"): 23,  # one per reset: 3 rollouts + 20 stale trials
}
ROLLOUTS = 3  # one batch, one per acting environment, each with one verifier result
LEAKY_CELLS = 13  # the run's own controls: 5 planted, 8 checks under a leak or fault
CONTROL_TRIALS = (3, 20)  # the positive control's typing and clipboard trials
CHANNEL_CLASSES = 9


@dataclass
class Template:
    """One node's window of records, as a pull reads them, and the span they fill."""

    batch: NodeBatch
    start: float
    length: float
    source: str


@dataclass
class SimNode:
    name: str
    store: RunStore  # the node's harness, which writes
    reader: RunStore  # the read-only connection a node answers pulls from
    cursor: Cursor = field(default_factory=Cursor)


@dataclass
class Measured:
    nodes: int
    records: list[int] = field(default_factory=list)  # merged in each window
    merge_s: list[float] = field(default_factory=list)
    merge_cpu_s: list[float] = field(default_factory=list)  # this process's CPU time
    read_s: list[float] = field(default_factory=list)
    write_s: list[float] = field(default_factory=list)
    pulls: list[int] = field(default_factory=list)
    idle_s: float = 0.0
    report_s: float = 0.0
    view_ms: float = 0.0  # one node's isolation rows through its view, at the end
    scan_ms: float = 0.0  # SQLite finding one node's isolation rows (a count), at the end
    plan: str = ""  # how SQLite finds them
    db_bytes: int = 0
    setup_s: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average at start and end

    @property
    def median_s(self) -> float:
        return statistics.median(self.merge_s)

    @property
    def per_window_records(self) -> float:
        return statistics.median(self.records)


# -- one node's window ------------------------------------------------------------------


def synthetic() -> Template:
    """The synthetic window: the counts above, every row clean, every look unchanged."""
    b = NodeBatch()
    ids: defaultdict[str, int] = defaultdict(int)

    def add(table: str, *row: Any) -> None:
        ids[table] += 1
        b.appended.setdefault(table, []).append((ids[table], *row))

    pool_pairs = [(a, c) for a in POOL for c in POOL if a != c]
    acting_pairs = [(a, c) for a in ACTING for c in ACTING if a != c]
    watched = [("env00", "env00")]  # a look's row: from the canary to itself when clean
    trials_in_all = sum(trials for trials, _ in ISOLATION_ROWS.values())
    k = 0
    for test, (trials, per_trial) in ISOLATION_ROWS.items():
        pairs = (
            watched
            if test in (CANARY_TEST, PARKED_CONSOLE_TEST)
            else pool_pairs
            if per_trial > len(acting_pairs)
            else acting_pairs
        )
        for trial in range(trials):
            k += 1
            at = k * WINDOW_S / (trials_in_all + 1)  # the trials spread over the window
            for i in range(per_trial):
                src, dst = pairs[i % len(pairs)]
                detail = f"class{i % CHANNEL_CLASSES}: nothing found" if test == "channels" else ""
                add("isolation_rows", 1, test, trial, src, dst, "clean", detail, at)
    sha = "0" * 64
    for i in range(LOOKS):
        at = 1.0 + i * WINDOW_S / LOOKS
        add("canary_samples", 1, at, 1, sha, sha, sha, "", "")
        add("console_samples", 1, at + 0.05, 1, sha, 42, "", "")
    n = 0
    for (test, phase), count in LATENCY.items():
        for i in range(count):
            n += 1
            env = POOL[i % 3] if test == "noisy_neighbor" else ACTING[i % 3]  # the bystanders
            add("latency_samples", 1, test, env, phase, n * WINDOW_S / 200, 38.5 + i % 7)
    for i in range(ROLLOUTS):
        env, task = ACTING[i % len(ACTING)], TASKS[i % len(TASKS)]
        rid = RolloutId(env, 1, i // len(ACTING) + 1)
        started, ended = 5.0 + i, 60.0 + i
        b.rollouts.append(
            (str(rid), env, 1, str(mint(rid)), task, started, ended, "success", None, 1.0, "",
             i + 1)
        )  # fmt: skip
        details = json.dumps({"detail": "", "task": task, "checked": "the saved document"})
        add("verifier_results", str(rid), f"smoke:{task}", "success", None, 1.0, details, ended)
    typing, clip = CONTROL_TRIALS
    skews = json.dumps([12.5] * clip)
    add("control_results", 0.0, typing, typing, clip, clip, 1, "", "", skews)
    leaky = [SWEEP_TEST, CANARY_TEST, CANARY_TEST, PARKED_CONSOLE_TEST, AUDIT_TEST]
    leaky += [t for t in ISOLATION_ROWS if t in load_battery() and t != SWEEP_TEST]
    for test in leaky[:LEAKY_CELLS]:
        add("leaky_controls", test, "shared-display", 1, 6, 2, "fired", WINDOW_S)
    b.environments = [
        (name, f"cr-{name}", f":{10 + i}", 0, 0.0, "{}") for i, name in enumerate(POOL)
    ]
    b.watches = [(PARKED_CONSOLE_TEST, 1, "", 0.0)]
    b.windows = [(1, 0.0, WINDOW_S, "closed")]
    return Template(b, 0.0, WINDOW_S, "synthetic")


def recorded(run_dir: Path) -> Template:
    """Every record of a node's run folder, read as pulls from the start read it."""
    whole = NodeBatch()
    with RunStore.open(run_dir, owner=False) as store:
        cursor = Cursor()
        while True:
            batch = store.changes_since(cursor)
            for table, rows in batch.appended.items():
                whole.appended.setdefault(table, []).extend(rows)
            whole.rollouts.extend(batch.rollouts)
            whole.windows, whole.environments = batch.windows, batch.environments
            whole.watches = batch.watches
            cursor = cursor.after(batch)
            if not batch.full:
                break
    times = [float(w[1]) for w in whole.windows] + [float(w[2]) for w in whole.windows if w[2]]
    if not times:  # no window: the span of the records' own times
        times = [float(r[-1]) for r in whole.appended.get("isolation_rows", [])] or [0.0]
    start, end = min(times), max(times)
    return Template(whole, start, max(end - start, 1.0), f"recorded from {run_dir.name}")


def write_window(store: RunStore, t: Template, window: int, start: float, first: bool) -> None:
    """Write ``t``'s records into a node's database as window ``window`` starting at
    ``start``, through the store's write methods; once-per-run records only if ``first``."""
    shift = start - t.start
    b = t.batch
    store.open_window(window, started_at=start)
    if first:
        for name, user, display, generation, _, meta in b.environments:
            store.add_environment(
                name,
                unix_user=user,
                display=display,
                generation=generation,
                meta=json.loads(meta or "{}"),
            )
        for name, active, detail, _ in b.watches:
            store.set_watch(WatchRecord(name, bool(active), detail))
        for r in b.appended.get("control_results", []):
            control = ControlResult(r[2], r[3], r[4], r[5], tuple(json.loads(r[9] or "[]")))
            store.add_control_result(control, r[8])
        for r in b.appended.get("leaky_controls", []):
            store.add_leaky_control(LeakyControlResult(r[1], r[2], bool(r[3]), r[4], r[5], r[6]))
    ids: dict[str, str] = {}  # the record's rollout id -> this window's
    seq: defaultdict[str, int] = defaultdict(int)
    for r in b.rollouts:
        env = str(r[1])
        seq[env] += 1
        rid = RolloutId(env, window, seq[env])
        ids[str(r[0])] = str(rid)
        store.start_rollout(mint(rid), str(r[4]), started_at=float(r[5]) + shift)
    group: list[IsolationRow] = []
    at = None
    for r in b.appended.get("isolation_rows", []):
        if group and r[8] != at:  # one transaction per trial, as `run_test` stores them
            store.add_isolation_rows(group, at=at + shift if at is not None else None)
            group = []
        at = r[8]
        group.append(IsolationRow(r[2], r[3], r[4], r[5], RowResult(r[6]), window, r[7] or ""))
    if group:
        store.add_isolation_rows(group, at=at + shift if at is not None else None)
    for r in b.appended.get("canary_samples", []):
        sources = tuple(filter(None, (r[8] or "").split(",")))
        sample = CanarySample(r[2] + shift, bool(r[3]), r[4], r[5], r[6], window, r[7], sources)
        store.add_canary_sample(sample)
    for r in b.appended.get("console_samples", []):
        sources = tuple(filter(None, (r[7] or "").split(",")))
        look = ConsoleSample(r[2] + shift, bool(r[3]), r[4], r[5], window, r[6], sources)
        store.add_console_sample(look)
    for r in b.appended.get("latency_samples", []):
        where = None if r[1] is None else window
        store.add_latency_samples([LatencySample(r[2], r[3], r[5] + shift, r[6], r[4], where)])
    for r in b.rollouts:
        if r[6] is not None:
            outcome = Outcome(Status(r[7]), r[9], Reason(r[8]) if r[8] else None, r[10] or "")
            store.finish_rollout(ids[str(r[0])], outcome, ended_at=float(r[6]) + shift)
    for r in b.appended.get("verifier_results", []):
        details = json.loads(r[6] or "{}")
        detail = details.pop("detail", "")
        outcome = Outcome(Status(r[3]), r[5], Reason(r[4]) if r[4] else None, detail, details)
        whose = None if r[1] is None else ids.get(str(r[1]), str(r[1]))
        store.add_verifier_result(whose, str(r[2]), outcome)
    store.close_window(window, ended_at=start + t.length)


# -- the driver -------------------------------------------------------------------------


def pull(driver: RunStore, node: SimNode) -> tuple[float, float, int, int]:
    """Pull ``node`` until caught up, as the driver does: (read s, write s, records, pulls)."""
    read = write = 0.0
    records = pulls = 0
    while True:
        t0 = time.perf_counter()
        batch = node.reader.changes_since(node.cursor)
        t1 = time.perf_counter()
        driver.copy_from_node(node.name, batch)
        t2 = time.perf_counter()
        node.cursor = node.cursor.after(batch)
        read, write = read + t1 - t0, write + t2 - t1
        records, pulls = records + batch.records, pulls + 1
        if not batch.full:
            return read, write, records, pulls


def measure(n: int, windows: int, template: Template) -> Measured:
    m = Measured(n, load=(os.getloadavg()[0], 0.0))
    plan = plan_tests(load_battery().values())
    names = [f"node{i:03d}" for i in range(n)]
    meta = {
        "job": "run",
        "config": {"envs": len(ACTING), "trials_scale": 1.0, "windows": windows},
        "tests": {p.name: p.trials for p in plan},
        "cluster": {"nodes": names},
    }
    base = time.time() - windows * template.length - 60
    with tempfile.TemporaryDirectory(prefix="cleanroom-bench-merge-") as tmp:
        root = Path(tmp)
        driver = RunStore.create(root / "driver", meta=meta)
        nodes: list[SimNode] = []
        try:
            for name in names:
                store = RunStore.create(root / name, meta={"job": "run", "node": name})
                nodes.append(SimNode(name, store, RunStore.open(root / name, owner=False)))
                driver.add_node(
                    name, node_id=name, host="127.0.0.1", envs=len(ACTING), run_dir=str(root)
                )
            for w in range(1, windows + 1):
                start = base + (w - 1) * template.length
                driver.open_window(w, started_at=start)
                began = time.monotonic()
                for node in nodes:  # the nodes' harnesses run the window (not timed)
                    write_window(node.store, template, w, start, first=w == 1)
                m.setup_s += time.monotonic() - began
                gc.collect()
                read = write = 0.0
                records = pulls = 0
                t0, c0 = time.perf_counter(), time.process_time()
                for node in nodes:
                    r, wr, rec, p = pull(driver, node)
                    read, write, records, pulls = read + r, write + wr, records + rec, pulls + p
                m.merge_s.append(time.perf_counter() - t0)
                m.merge_cpu_s.append(time.process_time() - c0)
                m.read_s.append(read)
                m.write_s.append(write)
                m.records.append(records)
                m.pulls.append(pulls)
                shares = driver.node_window_statuses(w)
                closed = len(shares) == n and all(s == "closed" for s in shares.values())
                status = "closed" if closed else "failed"
                driver.close_window(w, ended_at=start + template.length, status=status)
                print(
                    f"{n} node(s), window {w}: {records} records in {m.merge_s[-1]:.3f} s "
                    f"(reads {read:.3f} s, writes {write:.3f} s), window {status}",
                    file=sys.stderr,
                )
            gc.collect()
            t0 = time.perf_counter()
            for node in nodes:
                pull(driver, node)
            m.idle_s = time.perf_counter() - t0
            gc.collect()
            t0 = time.perf_counter()
            report = build_report(driver)
            m.report_s = time.perf_counter() - t0
            if len(report.nodes) != n:
                raise SystemExit(f"{n} node(s): the report holds {len(report.nodes)} node(s)")
            view = driver.node_view(names[0])
            took = []
            for _ in range(3):
                t0 = time.perf_counter()
                view.isolation_rows()
                took.append(time.perf_counter() - t0)
            m.view_ms = statistics.median(took) * 1000
            m.plan, m.scan_ms = one_nodes_rows(root / "driver" / DB_NAME, names[0])
        finally:
            for node in nodes:
                node.reader.close()
                node.store.close()
            driver.close()
        path = root / "driver" / DB_NAME
        wal = path.with_name(DB_NAME + "-wal")
        m.db_bytes = path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    m.load = (m.load[0], os.getloadavg()[0])
    print(
        f"{n} node(s): idle round {m.idle_s:.3f} s, report {m.report_s:.2f} s, "
        f"database {m.db_bytes / 1e6:.1f} MB, writing the nodes' windows took {m.setup_s:.1f} s",
        file=sys.stderr,
    )
    return m


def one_nodes_rows(path: Path, node: str) -> tuple[str, float]:
    """How SQLite finds one node's isolation rows, as a node's view asks for them, and how
    long finding them takes without making Python objects of them (a count, median of 3)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        where = "FROM isolation_rows WHERE node = ?"
        plan = conn.execute(f"EXPLAIN QUERY PLAN SELECT * {where}", (node,)).fetchall()
        took = []
        for _ in range(3):
            t0 = time.perf_counter()
            conn.execute(f"SELECT count(*) {where}", (node,)).fetchone()
            took.append(time.perf_counter() - t0)
    finally:
        conn.close()
    return "; ".join(str(r[-1]) for r in plan), statistics.median(took) * 1000


# -- the section ------------------------------------------------------------------------


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares a + b x through ``points`` (a = 0 with one point)."""
    if len(points) == 1:
        x, y = points[0]
        return 0.0, y / x
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def render(rows: list[Measured], template: Template, args: argparse.Namespace) -> str:
    base = rows[0]
    command = ".venv/bin/python bench/cluster_merge.py"
    if args.nodes != "1,10,100":
        command += f" --nodes {args.nodes}"
    if args.windows != 3:
        command += f" --windows {args.windows}"
    if args.recording:
        command += " --recording DIR"
    loads = "; ".join(f"{m.nodes} node(s) {m.load[0]:.1f} to {m.load[1]:.1f}" for m in rows)
    what = (
        "the synthetic window of the benchmark's docstring (one node's default window with 3 "
        "acting environments and the canary, 360 s)"
        if not args.recording
        else f"the records of a node's run folder ({template.source}), taken as one window"
    )
    lines = [
        SECTION,
        "",
        f"Command: `{command}` ({datetime.now(UTC):%Y-%m-%d %H:%M UTC}, "
        f"{len(os.sched_getaffinity(0))} cores, Linux {platform.release()}, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}). "
        f"1-minute load average at the start and end of each size: {loads} (2 cores: a "
        "load above 2 means other work shared them, which stretches wall times; the CPU "
        "column is this process's own time).",
        "",
        f"Every simulated node has a run database of its own and gets, each window, {what}: "
        f"{base.per_window_records / base.nodes:,.0f} records (appended rows and rollout "
        "changes), written through the store's write methods (not timed). The driver (a "
        "fresh run folder) then pulls every node in turn until caught up, as the cluster "
        "driver does (`changes_since` on the node's read-only connection, `copy_from_node`, "
        "`Cursor.after`): that round is the window's merge cost, over "
        f"{args.windows} windows. No Ray: the transport is not timed, and the nodes' reads, "
        "which on a cluster run on the nodes, run here one after the other. Ratios are to "
        "the 1-node run of the same invocation; reads and writes are summed over the windows.",
        "",
        "| nodes | records a window | merge s a window, median | max | CPU s, median "
        "| ratio to 1 node | per node ms | per node, ratio to 1 node | records/s "
        "| node-side reads | driver-side writes |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in rows:
        med, total = m.median_s, sum(m.merge_s)
        per_node = med / m.nodes
        lines.append(
            f"| {m.nodes} | {m.per_window_records:,.0f} | {med:.3f} | {max(m.merge_s):.3f} | "
            f"{statistics.median(m.merge_cpu_s):.3f} | {med / base.median_s:.1f}× | "
            f"{per_node * 1000:.2f} | {per_node / (base.median_s / base.nodes):.2f}× | "
            f"{sum(m.records) / total:,.0f} | "
            f"{sum(m.read_s):.3f} s ({sum(m.read_s) / total:.0%}) | "
            f"{sum(m.write_s):.3f} s ({sum(m.write_s) / total:.0%}) |"
        )
    lines += [
        "",
        f"After the {args.windows} windows: one more round of pulls, which finds nothing new "
        "(the driver repeats it every 2 s while windows run; each pull still reads and "
        "rewrites the node's windows, environments and watches), the driver's database on "
        "disk (run.sqlite and its WAL), `build_report` on it (each node's report through "
        "`node_view`, and the merged verdict), and one node's isolation rows read through "
        "its view (median of 3), and of that the time SQLite takes to find them (a count).",
        "",
        "| nodes | idle round s | per node ms | database MB | MB per node-window "
        "| build_report s | ratio to 1 node | per node ms | one node's rows ms "
        "| of which finding them ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in rows:
        mb = m.db_bytes / 1e6
        lines.append(
            f"| {m.nodes} | {m.idle_s:.3f} | {m.idle_s / m.nodes * 1000:.2f} | {mb:.1f} | "
            f"{mb / (m.nodes * args.windows):.2f} | {m.report_s:.2f} | "
            f"{m.report_s / base.report_s:.1f}× | {m.report_s / m.nodes * 1000:.1f} | "
            f"{m.view_ms:.1f} | {m.scan_ms:.1f} |"
        )
    a, b = fit([(m.nodes, m.median_s) for m in rows])
    ia, ib = fit([(m.nodes, m.idle_s) for m in rows])
    top = rows[-1]
    at_1000, idle_1000 = a + b * 1000, ia + ib * 1000
    mb_1000 = top.db_bytes / 1e6 / (top.nodes * args.windows) * 1000
    lines += [
        "",
        "**Extrapolation to 1000 nodes (not measured).** A straight line through the measured "
        f"medians ({a:.3f} s + {b * 1000:.2f} ms per node) gives **{at_1000:.1f} s of merge "
        f"per window**, {at_1000 / template.length:.1%} of a {template.length:.0f} s window "
        f"({top.nodes} nodes' cost per node x 1000: {top.median_s / top.nodes * 1000:.1f} s). "
        f"The same line through the idle rounds gives {idle_1000:.2f} s for a round of 1000 "
        "pulls that find nothing, against the driver's 2 s between rounds. The database "
        f"would grow by about {mb_1000:.0f} MB a window.",
    ]
    if len(rows) > 1 and "SCAN" not in top.plan:
        lo = rows[-2]
        report_1000 = top.report_s / top.nodes * 1000
        lines += [
            "",
            "Each node's view asks for its records with `WHERE node = ?`, which SQLite answers "
            f"for the isolation rows by `{top.plan}`: finding one node's rows took "
            f"{lo.scan_ms:.1f} ms at {lo.nodes} node(s) and {top.scan_ms:.1f} ms at {top.nodes}, "
            "so the report grows with the nodes, not their square. Extrapolated (not "
            f"measured): `build_report` at 1000 nodes, about {report_1000:.0f} s "
            f"({top.nodes} nodes' cost per node x 1000).",
        ]
    elif len(rows) > 1:
        lo = rows[-2]
        scans_1000 = top.scan_ms / 1000 * (1000 / top.nodes) * 1000
        lines += [
            "",
            "Each node's view asks for its records with `WHERE node = ?`, which SQLite answers "
            f"for the isolation rows by `{top.plan}`: finding one node's rows took "
            f"{lo.scan_ms:.1f} ms at {lo.nodes} node(s) and {top.scan_ms:.1f} ms at {top.nodes} "
            f"({top.nodes / lo.nodes:.0f}× the rows), and `build_report` does it once per "
            "node, so that part grows with the square of the nodes. Extrapolated (not "
            f"measured): at 1000 nodes, about {scans_1000:.0f} s for the isolation rows' "
            f"scans alone ({top.scan_ms:.1f} ms x {1000 / top.nodes:.0f} x 1000 views), on "
            "top of the report's linear part.",
        ]
    lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1,10,100", help="simulated node counts")
    parser.add_argument("--windows", type=int, default=3, help="windows a run")
    parser.add_argument("--recording", type=Path, metavar="DIR", help="a node's run folder")
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args()
    if args.windows < 1:
        parser.error("at least one window")
    counts = sorted({int(n) for n in args.nodes.split(",")})
    template = recorded(args.recording) if args.recording else synthetic()
    by_table = {t: len(rows) for t, rows in template.batch.appended.items() if rows}
    print(f"one node's window ({template.source}): {by_table}, "
          f"rollouts {len(template.batch.rollouts)}", file=sys.stderr)  # fmt: skip
    missing = sorted(set(APPENDED) - set(by_table))
    if missing:
        print(f"no records of {', '.join(missing)}", file=sys.stderr)
    rows = [measure(n, args.windows, template) for n in counts]
    text = render(rows, template, args)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
