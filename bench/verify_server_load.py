"""Benchmark of the verify server: form submissions per second and audit latency.

Run: ``.venv/bin/python bench/verify_server_load.py`` (needs ``wrk``: ``apt-get install -y
wrk``). Figures are printed, written to ``bench/out/verify_server/results.json`` and put in
the ``## Verify server`` section of ``bench/RESULTS.md``.

1. Form submissions/s: wrk (a separate load process, 1 thread, 32 connections) POSTs
   urlencoded tokens to one lease's form over loopback; baseline: a minimal ASGI app that
   reads the body and answers 200, on the same uvicorn settings, loaded identically. The
   two are loaded in turn for several rounds; the ratio is the median of the rounds'.
2. Audit latency with 1,000,000 stored rows (bulk-inserted through the store module; 1,000
   windows of 1,000 rows, 1% cross-delivered), median and p95 over HTTP; baseline: healthz.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from cleanroom.core.tokens import mint
from cleanroom.store.submissions import LeaseRecord, NewSubmission, SubmissionStore
from cleanroom.verify_server.budget import LeaseBudget
from cleanroom.verify_server.process import VerifyServerProcess
from results_md import write_section

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent / "verify_server"
OUT = ROOT / "bench" / "out" / "verify_server"
COMMAND = ".venv/bin/python bench/verify_server_load.py"


class WrkMissing(RuntimeError):
    """wrk is not installed."""


def wrk(url: str, body: str, seconds: int, connections: int) -> dict[str, float]:
    """Run wrk against ``url`` POSTing ``body``; requests/s, latencies and error counts."""
    exe = shutil.which("wrk")
    if exe is None:
        raise WrkMissing("wrk is not installed; install it with: apt-get install -y wrk")
    argv = [exe, "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s",
            str(HERE / "post_form.lua"), url]  # fmt: skip
    env = {**os.environ, "CLEANROOM_BENCH_BODY": body}
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])  # type: ignore[index]
    total = int(re.search(r"(\d+) requests in", out)[1])  # type: ignore[index]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {
        "requests_per_s": rps,
        "requests": total,
        "non_2xx": int(bad[1]) if bad else 0,
        "p50_ms": _wrk_latency(out, "50%"),
        "p99_ms": _wrk_latency(out, "99%"),
        "socket_errors": 0 if errors is None else sum(map(int, re.findall(r"\d+", errors[1]))),
    }


def _wrk_latency(out: str, pct: str) -> float:
    m = re.search(rf"{re.escape(pct)}\s+([\d.]+)(us|ms|s)\b", out)
    if m is None:
        return float("nan")
    return float(m[1]) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m[2]]


def start_baseline(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start the baseline app as its own process; its process and URL."""
    port_file = work / "baseline.port"
    port_file.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, str(HERE / "baseline_app.py"), str(port_file)])
    deadline = time.monotonic() + 15
    while not (port_file.exists() and port_file.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("baseline app did not start")
        time.sleep(0.02)
    return proc, f"http://127.0.0.1:{int(port_file.read_text())}"


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as the kernel reports them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measured(pid: int, url: str, body: str, seconds: int, connections: int) -> dict[str, float]:
    """One wrk run against ``url`` with the serving process's CPU time per request."""
    before = cpu_seconds(pid)
    run = wrk(url, body, seconds, connections)
    used = cpu_seconds(pid) - before
    return {**run, "cpu_us_per_request": used / max(run["requests"], 1) * 1e6}


def bench_form(work: Path, seconds: int, connections: int, rounds: int) -> dict[str, object]:
    """Form submissions/s of the verify server against the baseline app.

    Both servers run side by side and are loaded in turn, ``rounds`` times: on a machine
    busy with other work the load drifts within a minute, and alternating runs see the
    same drift, so the median of the per-round ratios is the figure to trust."""
    form_dir = work / "form"
    shutil.rmtree(form_dir, ignore_errors=True)
    proc, base_url = start_baseline(work)
    try:
        # One lease takes the whole load: its budget is lifted past what the rounds send.
        unbounded = LeaseBudget(submissions=10**9, nbytes=1 << 40)
        with (
            VerifyServerProcess.start(form_dir, lease_budget=unbounded) as server,
            server.client() as client,
        ):
            lease = client.lease(mint("env01-w001-r0001"), ttl_s=3600)
            body = f"token={lease.token}"
            url = f"{server.url}/v1/form/{lease.lease_id}"
            wrk(url, body, 2, connections)  # warm up
            wrk(f"{base_url}/v1/form/x", body, 2, connections)
            server_runs, base_runs, loads = [], [], []
            for _ in range(rounds):
                loads.append(load_average())
                server_runs.append(measured(server.pid, url, body, seconds, connections))
                base_runs.append(
                    measured(proc.pid, f"{base_url}/v1/form/x", body, seconds, connections)
                )
            with SubmissionStore.open(server.db) as db:
                stored = db.totals().submissions
    finally:
        proc.terminate()
        proc.wait()
    ratios = [
        s["requests_per_s"] / b["requests_per_s"]
        for s, b in zip(server_runs, base_runs, strict=True)
    ]
    answered = sum(int(r["requests"] - r["non_2xx"]) for r in server_runs)
    return {
        "server": _median_run(server_runs),
        "baseline": _median_run(base_runs),
        "ratios": ratios,
        "ratio": statistics.median(ratios),
        "cpu_ratio": _median_run(base_runs)["cpu_us_per_request"]
        / _median_run(server_runs)["cpu_us_per_request"],
        "rows_stored": stored,
        "answered_2xx_at_least": answered,
        "load_averages": loads,
        "rounds": rounds,
        "connections": connections,
        "seconds": seconds,
    }


def _median_run(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def _rows(windows: int, per_window: int, cross_every: int) -> Iterator[NewSubmission]:
    rng = random.Random(7)
    for w in range(windows):
        for i in range(per_window):
            env = f"env{(i % 40) + 1:02d}"
            rollout = f"{env}-w{w:03d}-r{i:04d}"
            token = f"{rollout}-{rng.getrandbits(32):08x}"
            if i % cross_every == 0:
                other = f"env{(i % 40) + 2:02d}"
                token = f"{other}-w{w:03d}-r{i:04d}-{rng.getrandbits(32):08x}"
            token_env = token[:5]
            yield NewSubmission(
                lease_id=f"lease-{w}-{i}",
                env=env,
                rollout_id=rollout,
                window=w,
                submitted_at=1.7e9 + w * 60 + i * 0.01,
                body=token.encode(),
                found_tokens=(token,),
                found_envs=(token_env,),
                cross=token_env != env,
            )


def _latencies(http: httpx.Client, paths: list[str]) -> list[float]:
    out = []
    for path in paths:
        t0 = time.perf_counter()
        response = http.get(path)
        out.append((time.perf_counter() - t0) * 1e3)
        response.raise_for_status()
    return out


def _summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "median_ms": statistics.median(ordered),
        "p95_ms": ordered[int(0.95 * (len(ordered) - 1))],
        "n": len(ordered),
    }


def bench_audit(work: Path, rows: int, requests: int) -> dict[str, object]:
    """Audit latency over HTTP with ``rows`` stored rows, against healthz."""
    audit_dir = work / "audit"
    shutil.rmtree(audit_dir, ignore_errors=True)
    audit_dir.mkdir(parents=True)
    db_path = audit_dir / "verify.sqlite3"
    windows, per_window, cross_every = 1000, rows // 1000, 100
    t0 = time.perf_counter()
    with SubmissionStore.open(db_path) as db:
        db.add_lease(LeaseRecord("bench", "env01", "env01-w000-r0000", "x", 0, 0.0, 1.0))
        inserted = db.add_submissions(_rows(windows, per_window, cross_every))
    load_s = time.perf_counter() - t0
    with VerifyServerProcess.start(audit_dir, db=db_path) as server:
        headers = {"Authorization": f"Bearer {server.key}"}
        with httpx.Client(base_url=server.url, headers=headers, trust_env=False) as http:
            rng = random.Random(11)
            paths = [f"/v1/audit?window={rng.randrange(windows)}" for _ in range(requests)]
            _latencies(http, paths[:20] + ["/v1/healthz"] * 20)  # warm up
            sample = http.get(paths[0]).json()
            audit_ms = _latencies(http, paths)
            health_ms = _latencies(http, ["/v1/healthz"] * requests)
    audit = _summary(audit_ms)
    health = _summary(health_ms)
    return {
        "rows": inserted,
        "windows": windows,
        "cross_rows_per_window": sample["cross"],
        "bulk_insert_s": load_s,
        "audit": audit,
        "healthz": health,
        "median_ratio": audit["median_ms"] / health["median_ms"],
    }


def machine() -> dict[str, str]:
    """What the figures were measured on."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": str(os.cpu_count()),
        "kernel": platform.release(),
        "cpu": cpu,
        "python": platform.python_version(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _load_row(name: str, run: dict[str, float]) -> str:
    return (
        f"| {name} | {run['requests_per_s']:,.0f} | {run['p50_ms']:.2f} ms"
        f" | {run['p99_ms']:.2f} ms | {run['non_2xx']:.0f}"
        f" | {run['cpu_us_per_request']:.0f} µs |"
    )


def _latency_row(name: str, summary: dict[str, float]) -> str:
    median, p95, n = summary["median_ms"], summary["p95_ms"], summary["n"]
    return f"| {name} | {median:.2f} ms | {p95:.2f} ms | {n:.0f} |"


def markdown(results: dict[str, object]) -> str:
    """The ``## Verify server`` section of bench/RESULTS.md."""
    form = results["form"]
    audit = results["audit"]
    m = results["machine"]
    assert isinstance(form, dict) and isinstance(audit, dict) and isinstance(m, dict)
    s, b = form["server"], form["baseline"]
    return f"""## Verify server

Command: `{COMMAND}` (load generator: `wrk` 1 thread, {form["connections"]} connections,
{form["seconds"]} s per run after a 2 s warm-up; install with `apt-get install -y wrk`).
Machine: nproc {m["nproc"]}, kernel {m["kernel"]}, {m["cpu"] or "unknown CPU"},
Python {m["python"]}; measured {m["date"]}. Load average (1, 5, 15 min) at the start of
each round: {"; ".join(form["load_averages"])} (a load above the core count means
other work shared the cores with the servers and the load generator).

**Form submissions over loopback** (`POST /v1/form/{{lease}}`, urlencoded token, one
SQLite row per request; the load generator runs as a separate process on the same
machine). Baseline: a minimal ASGI app that reads the body and answers 200 on the same
uvicorn settings, loaded identically. Both run side by side and are loaded in turn,
{form["rounds"]} rounds; the table shows the medians, CPU is the serving process's user
plus system time per request.

| | requests/s | p50 latency | p99 latency | non-2xx | CPU per request |
|---|---:|---:|---:|---:|---:|
{_load_row("verify server", s)}
{_load_row("baseline (minimal ASGI)", b)}

Ratio to baseline: **{form["ratio"]:.2f}** (median of the rounds' ratios:
{", ".join(f"{r:.2f}" for r in form["ratios"])}; aim: at least 0.5). Ratio of CPU per
request (baseline / server): {form["cpu_ratio"]:.2f}. Rows stored during the runs:
{form["rows_stored"]:,}, at least as many as the {form["answered_2xx_at_least"]:,} 2xx answers
of the timed runs (the warm-up's rows come on top).
{str(results["note"]) + chr(10) if results.get("note") else ""}
**Audit latency** (`GET /v1/audit?window=W` over HTTP, sequential, keep-alive) with
{audit["rows"]:,} stored rows ({audit["windows"]:,} windows, {audit["cross_rows_per_window"]}
cross rows in a window; bulk insert through the store took {audit["bulk_insert_s"]:.1f} s).
Baseline: `GET /v1/healthz` on the same server and client.

| | median | p95 | requests |
|---|---:|---:|---:|
{_latency_row("audit", audit["audit"])}
{_latency_row("healthz (baseline)", audit["healthz"])}

Median ratio to baseline: {audit["median_ratio"]:.2f} (target: audit under 50 ms).
"""


def main() -> int:
    """Run both benchmarks, print the figures and record them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=int, default=5, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=5, help="alternating runs of each app")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=300, help="audit requests to time")
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    parser.add_argument("--note", default="", help="a paragraph added under the form figures")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    try:
        form = bench_form(OUT, args.seconds, args.connections, args.rounds)
    except WrkMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"form": form}, indent=2))
    audit = bench_audit(OUT, args.rows, args.requests)
    print(json.dumps({"audit": audit}, indent=2))
    results = {
        "form": form,
        "audit": audit,
        "machine": machine(),
        "command": COMMAND,
        "note": args.note,
    }
    (OUT / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    section = markdown(results)
    print(section)
    if not args.no_write:
        write_section("## Verify server", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
