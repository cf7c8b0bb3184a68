"""What a kernel per environment costs: the same sandbox spec run by ``runsc`` (gVisor,
ptrace platform) against ``runc`` (the default), in the same run, trials interleaved.

    .venv/bin/python bench/gvisor.py [--trials 3] [--resets 3] [--shots 20] [--no-write]

Measured for each runtime: a bare sandbox (make, enter one command, end, the PSS of its
first processes); a system-call-heavy loop inside (20,000 ``open``/``close`` of
``/dev/null`` in Python); a pool of one environment plus the canary, each running Writer
(start until every window is up, resets of env01, screenshots, a typing trial: text typed
into Writer until its document holds it, and env01's PSS: its display server, its
programs, and for gVisor the sandboxes' kernels and file servers, which hold the
programs' memory); and which programs start there at all. Written to the ``## gVisor``
section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cleanroom.environments.actions import TypeText
from cleanroom.environments.interface import FocusedText, Screenshot
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.session.processes import process_tree
from cleanroom.environments.session.sandbox import Entry, Sandbox, runtime_environment
from cleanroom.environments.session.sandbox_spec import (
    SandboxLayout,
    SandboxProtections,
    SandboxRuntime,
)
from cleanroom.environments.x11.display import DisplayView, XvfbDisplay
from env_procs import env_pids, pss_mb
from results_md import write_section

SECTION = "## gVisor"
ROOT = Path("/var/lib/cleanroom/bench-gvisor")
RUNTIMES = (SandboxRuntime.RUNC, SandboxRuntime.RUNSC)
LOOP = (
    "import time; t = time.perf_counter(); "
    "[open('/dev/null').close() for _ in range(20000)]; print(time.perf_counter() - t)"
)
TYPED = "The quick brown fox jumps over the lazy dog. " * 2
_TYPING_TIMEOUT_S = 60.0


def _runtime_pids(containers: list[str]) -> list[int]:
    """The host processes that carry named sandboxes out: for gVisor its kernel (the
    sentry), its file server (the gofer) and the ptrace platform's stubs; every host
    process whose command line names the container, and what they started."""
    out: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if any(c in cmdline for c in containers):
            out += [p for p in process_tree(int(entry.name)) if p not in out]
    return out


def _layout(display_number: int | None = None) -> SandboxLayout:
    home = ROOT / "homes" / "mine"
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, 65534, 65534)
    return SandboxLayout(writable=(home,), hidden=(ROOT / "homes",), display_number=display_number)


def _inside(
    box: Sandbox, argv: list[str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    command, _ = box.command(Entry(argv, 65534, 65534, "/", {"PATH": "/usr/bin:/bin"}))
    return subprocess.run(
        command, env=runtime_environment(), capture_output=True, text=True, timeout=timeout
    )


def sandbox_trial(runtime: SandboxRuntime) -> dict[str, float]:
    """Make, enter ``true``, the syscall loop, the first processes' PSS, end."""
    protections = SandboxProtections(runtime=runtime)
    t0 = time.perf_counter()
    box = Sandbox.start("bench", _layout(), ROOT / "sandbox.log", owner="crgvb",
                        protections=protections)  # fmt: skip
    t1 = time.perf_counter()
    _inside(box, ["true"])
    t2 = time.perf_counter()
    loop = float(_inside(box, ["python3", "-c", LOOP]).stdout.strip() or "nan")
    pids = _runtime_pids([box.container]) + process_tree(box.init_pid)
    pss = sum(pss_mb(p) for p in set(pids))
    t3 = time.perf_counter()
    box.stop()
    t4 = time.perf_counter()
    return {"make": t1 - t0, "enter": t2 - t1, "end": t4 - t3, "pss": pss, "loop": loop}


def display_trial(runtime: SandboxRuntime) -> dict[str, float]:
    """Xvfb in a sandbox of its own: start until it answers, a screenshot, end."""
    from cleanroom.environments.x11.screen import Screen

    view = DisplayView(
        owner="crgvd", hidden=(ROOT / "homes",), protections=SandboxProtections(runtime=runtime)
    )
    t0 = time.perf_counter()
    display = XvfbDisplay.start(ROOT / "display.auth", view=view, log=ROOT / "display.log")
    t1 = time.perf_counter()
    screen = Screen(display.name)
    shots = []
    for _ in range(5):
        t = time.perf_counter()
        screen.screenshot_png()
        shots.append(time.perf_counter() - t)
    screen.close()
    t2 = time.perf_counter()
    display.stop()
    return {"start": t1 - t0, "shot": statistics.median(shots), "end": time.perf_counter() - t2}


def _env_pss(pool: Pool, name: str) -> float:
    env = pool.env(name)
    pids = env_pids(env)
    live = env.running
    if live is not None:
        boxes = [live.session.sandbox, live.display.sandbox]
        pids += _runtime_pids([b.container for b in boxes if b is not None])
    return sum(pss_mb(p) for p in set(pids))


def _typing_s(pool: Pool, name: str) -> float:
    """Type `TYPED` into the focused Writer and wait until its document holds it."""
    generation = pool.generation(name)
    t0 = time.perf_counter()
    pool.act(name, generation, TypeText(kind="type_text", text=TYPED))
    while time.perf_counter() - t0 < _TYPING_TIMEOUT_S:
        seen = pool.observe(name, generation, FocusedText).content or ""
        if TYPED.strip() in seen:
            return time.perf_counter() - t0
        time.sleep(0.05)
    return float("nan")


def pool_trial(runtime: SandboxRuntime, resets: int, shots: int) -> dict[str, Any]:
    """A pool of env01 and the canary, each with Writer: start, typing, screenshots,
    PSS, resets."""
    run = ROOT / f"run-{runtime}-{time.time_ns()}"
    run.mkdir(parents=True)
    config = PoolConfig(
        envs=1,
        programs=("writer",),
        canary_programs=("writer",),
        gvisor=runtime == SandboxRuntime.RUNSC,
    )
    pool = Pool(config, run)
    t0 = time.perf_counter()
    try:
        pool.start()
        start = time.perf_counter() - t0
        typing = _typing_s(pool, "env01")
        lat = []
        for _ in range(shots):
            t = time.perf_counter()
            pool.observe("env01", pool.generation("env01"), Screenshot)
            lat.append(time.perf_counter() - t)
        pss = _env_pss(pool, "env01")
        reset_times = []
        for _ in range(resets):
            t = time.perf_counter()
            pool.reset("env01")
            reset_times.append(time.perf_counter() - t)
        typing_after = _typing_s(pool, "env01")
    finally:
        t = time.perf_counter()
        pool.stop()
        stop = time.perf_counter() - t
    return {
        "start": start,
        "typing": typing,
        "typing_after_reset": typing_after,
        "shot": statistics.median(lat),
        "pss": pss,
        "reset": statistics.median(reset_times),
        "stop": stop,
    }


def programs_probe() -> list[tuple[str, str]]:
    """Which of the programs' binaries run in a gVisor sandbox on a gVisor display: each
    started for a few seconds, its exit and first complaint kept."""
    prot = SandboxProtections(runtime=SandboxRuntime.RUNSC)
    view = DisplayView(owner="crgvp", hidden=(ROOT / "homes",), protections=prot)
    display = XvfbDisplay.start(ROOT / "display.auth", view=view, log=ROOT / "display.log")
    layout = _layout(display.number)
    home = layout.writable[0]
    auth = home / ".Xauthority"
    auth.write_bytes((ROOT / "display.auth").read_bytes())
    os.chown(auth, 65534, 65534)
    box = Sandbox.start("probe", layout, ROOT / "sandbox.log", owner="crgvp", protections=prot)
    out = []
    probes = {
        "xterm (terminal)": "timeout 8 xterm -e 'sleep 1'",
        "ls -l (coreutils statx)": "ls -l /usr/bin/soffice >/dev/null",
        "script (a pty as controlling terminal)": "timeout 8 script -qc true /dev/null",
    }
    try:
        for what, shell in probes.items():
            command, _ = box.command(
                Entry(["/bin/sh", "-c", shell], 65534, 65534, str(home),
                      {"PATH": "/usr/bin:/bin", "DISPLAY": display.name, "HOME": str(home)})
            )  # fmt: skip
            done = subprocess.run(command, env=runtime_environment(), capture_output=True,
                                  text=True, timeout=30)  # fmt: skip
            first = next((ln for ln in done.stderr.splitlines() if ln.strip()), "")
            state = "runs" if done.returncode == 0 else f"exit {done.returncode}: `{first[:90]}`"
            out.append((what, state))
    finally:
        box.stop()
        display.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--resets", type=int, default=3)
    parser.add_argument("--shots", type=int, default=20)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    ROOT.mkdir(parents=True, exist_ok=True)
    boxes: dict[str, list[dict[str, float]]] = {r: [] for r in RUNTIMES}
    displays: dict[str, list[dict[str, float]]] = {r: [] for r in RUNTIMES}
    pools: dict[str, list[dict[str, Any]]] = {r: [] for r in RUNTIMES}
    load_before = os.getloadavg()[0]
    for _ in range(args.trials):
        for runtime in RUNTIMES:
            boxes[runtime].append(sandbox_trial(runtime))
            displays[runtime].append(display_trial(runtime))
    for _ in range(max(1, args.trials // 2)):
        for runtime in RUNTIMES:
            pools[runtime].append(pool_trial(runtime, args.resets, args.shots))
    probes = programs_probe()
    load_after = os.getloadavg()[0]
    text = render(args, boxes, displays, pools, probes, load_before, load_after)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
    with contextlib.suppress(OSError):
        (ROOT / "homes" / "mine" / ".Xauthority").unlink()


def _med(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def render(
    args: argparse.Namespace,
    boxes: dict[str, list[dict[str, float]]],
    displays: dict[str, list[dict[str, float]]],
    pools: dict[str, list[dict[str, Any]]],
    probes: list[tuple[str, str]],
    load_before: float,
    load_after: float,
) -> str:
    """The section's text: each figure for runc and runsc, and runsc's ratio."""
    runc, runsc = SandboxRuntime.RUNC, SandboxRuntime.RUNSC

    def row(what: str, table: dict[str, list[dict[str, Any]]], key: str, scale: float,
            fmt: str) -> str:  # fmt: skip
        a, b = _med(table[runc], key) * scale, _med(table[runsc], key) * scale
        return f"| {what} | {a:{fmt}} | {b:{fmt}} | {b / a:.1f} |"

    machine = f"{platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}"
    version = subprocess.run(["runsc", "--version"], capture_output=True, text=True)
    runsc_version = version.stdout.splitlines()[0] if version.stdout else "runsc"
    n_pools = len(pools[runc])
    lines = [
        SECTION,
        "",
        f"Command: `python bench/gvisor.py --trials {args.trials} --resets {args.resets} "
        f"--shots {args.shots}` ({datetime.now(UTC):%Y-%m-%d}, {machine}; {runsc_version}, "
        "ptrace platform: this machine's CPU offers no hardware virtualisation to its KVM "
        f"platform). Medians; sandboxes and displays {args.trials} trials, pools "
        f"{n_pools}, runc and runsc interleaved. The 1-minute load average was "
        f"{load_before:.1f} at the start and {load_after:.1f} at the end.",
        "",
        "| figure | runc (default) | runsc (gVisor) | runsc / runc |",
        "|---|---|---|---|",
        row("sandbox make ms", boxes, "make", 1000, ".0f"),
        row("sandbox enter (`true`) ms", boxes, "enter", 1000, ".0f"),
        row("sandbox end ms", boxes, "end", 1000, ".0f"),
        row("sandbox first processes PSS MB", boxes, "pss", 1, ".1f"),
        row("20,000 open/close in Python s", boxes, "loop", 1, ".2f"),
        row("display (Xvfb) start ms", displays, "start", 1000, ".0f"),
        row("display screenshot ms (direct)", displays, "shot", 1000, ".1f"),
        row("display end ms", displays, "end", 1000, ".0f"),
        row("pool start s (env01 + canary, Writer)", pools, "start", 1, ".1f"),
        row("reset of env01 s", pools, "reset", 1, ".2f"),
        row("screenshot through the pool ms", pools, "shot", 1000, ".1f"),
        row("typing trial s (90 characters into Writer)", pools, "typing", 1, ".2f"),
        row("typing trial after resets s", pools, "typing_after_reset", 1, ".2f"),
        row("env01 PSS MB (display, Writer, sandboxes)", pools, "pss", 1, ".0f"),
        row("pool stop s", pools, "stop", 1, ".1f"),
        "",
        "In a gVisor sandbox (its own kernel, a display in a gVisor sandbox of its own):",
        "",
        "| probe | result |",
        "|---|---|",
        *(f"| {what} | {state} |" for what, state in probes),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
