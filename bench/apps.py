"""Benchmark of what each app OSWorld's tasks launch costs an environment: the time from
the task's ``launch`` step to the app's main window, the CPU time the environment spent
on the start, and the memory the app adds, in both modes, against the baseline of the
same environment with nothing launched, measured in the same run. Writes the
``## OSWorld apps: the cost of each per environment`` section of bench/RESULTS.md.

    .venv/bin/python bench/apps.py [--runs 3] [--modes sandbox,containers] [--settle 5]

Each run starts one app alone in a pool environment that starts no program of its own,
waits for its main window, lets it settle, measures, and resets the environment (which
ends the app); the figures are medians over the runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cleanroom.environments.pool.environment import DesktopEnvironment
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.lifecycle import wait_until
from env_procs import cpu_s, env_pids, pss_mb, rss_mb
from results_md import write_section

SECTION = "## OSWorld apps: the cost of each per environment"
ENV = "env01"
START_WITHIN_S = 120.0

# A Thunderbird profile as a task unpacks one into the home (without one Thunderbird
# starts on its account wizard).
_THUNDERBIRD_PROFILE = (
    "import pathlib; root = pathlib.Path.home() / '.thunderbird'; "
    "(root / 'p.default').mkdir(parents=True); "
    "(root / 'profiles.ini').write_text('[Profile0]\\nName=default\\nIsRelative=1\\n"
    "Path=p.default\\nDefault=1\\n\\n[General]\\nStartWithLastProfile=1\\nVersion=2\\n')"
)


@dataclass(frozen=True)
class App:
    """An app as OSWorld's tasks launch it (their ``launch`` commands, as argv) and its
    main window's class and a part of its title."""

    name: str
    argvs: tuple[tuple[str, ...], ...]
    window_class: str
    title: str
    prepare: str | None = None


APPS = (
    App("calc", (("libreoffice", "--calc"),), "libreoffice-calc", "LibreOffice Calc"),
    App("impress", (("libreoffice", "--impress"),), "libreoffice-impress", "LibreOffice Impress"),
    App("gimp", (("gimp",),), "gimp", "GNU Image Manipulation Program"),
    App(
        "vlc",
        (("/bin/sh", "-c", "VLC_VERBOSE=-1 vlc --no-audio --no-video-title-show"),),
        "vlc",
        "VLC media player",
    ),
    App(
        "thunderbird",
        (("/usr/bin/thunderbird",),),
        "thunderbird-default",
        "Mozilla Thunderbird",
        prepare=_THUNDERBIRD_PROFILE,
    ),
    App(
        "chrome",
        (
            ("google-chrome", "--remote-debugging-port=1337"),
            ("socat", "tcp-listen:9222,fork", "tcp:localhost:1337"),
        ),
        "google-chrome",
        "Chromium",
    ),
)


@dataclass
class Sample:
    """What the environment held and had spent at one moment."""

    rss_mb: float
    pss_mb: float
    cpu_s: float

    @classmethod
    def take(cls, env: DesktopEnvironment) -> Sample:
        pids = env_pids(env)
        return cls(
            sum(rss_mb(p) for p in pids),
            sum(pss_mb(p) for p in pids),
            sum(cpu_s(p) for p in pids),
        )


def _main_window(env: DesktopEnvironment, app: App) -> bool:
    return any(
        w.wm_class.lower() == app.window_class and app.title in w.title for w in env.windows()
    )


def measure_app(pool: Pool, app: App, settle_s: float) -> dict[str, float]:
    """One start of ``app``: to its main window, then settled; the environment reset."""
    env = pool.env(ENV)
    if app.prepare:
        pool.run_inside(ENV, [pool.python(ENV), "-c", app.prepare])
    before = Sample.take(env)
    t = time.monotonic()
    for i, argv in enumerate(app.argvs):
        pool.start_inside(ENV, list(argv), f"bench-{app.name}-{i}")
    if not wait_until(lambda: _main_window(env, app), START_WITHIN_S, 0.05):
        raise RuntimeError(f"{app.name} showed no main window in {START_WITHIN_S:g} s")
    start = time.monotonic() - t
    time.sleep(settle_s)
    after = Sample.take(env)
    t = time.monotonic()
    pool.reset(ENV)
    reset = time.monotonic() - t
    return {
        "start": start,
        "cpu": after.cpu_s - before.cpu_s,
        "rss": after.rss_mb - before.rss_mb,
        "pss": after.pss_mb - before.pss_mb,
        "reset": reset,
    }


def measure_nothing(pool: Pool, settle_s: float) -> dict[str, float]:
    """The baseline: the environment with nothing launched, over the same settle time,
    and a reset of it."""
    env = pool.env(ENV)
    before = Sample.take(env)
    time.sleep(settle_s)
    after = Sample.take(env)
    t = time.monotonic()
    pool.reset(ENV)
    return {
        "start": 0.0,
        "cpu": after.cpu_s - before.cpu_s,
        "rss": after.rss_mb,
        "pss": after.pss_mb,
        "reset": time.monotonic() - t,
    }


def measure_mode(containers: bool, runs: int, settle_s: float) -> dict[str, dict[str, float]]:
    """Median figures per app, and the baseline (``nothing``), in one mode."""
    config = PoolConfig(envs=1, programs=(), canary_programs=("terminal",), containers=containers)
    pool = Pool(config, Path(tempfile.mkdtemp(prefix="bench-apps-")))
    pool.start()
    try:
        samples: dict[str, list[dict[str, float]]] = {"nothing": []}
        samples.update({a.name: [] for a in APPS})
        for _ in range(runs):  # the apps in turn, so a slow spell hits all of them alike
            samples["nothing"].append(measure_nothing(pool, settle_s))
            for app in APPS:
                samples[app.name].append(measure_app(pool, app, settle_s))
    finally:
        pool.stop()
    return {
        name: {k: statistics.median(s[k] for s in rows) for k in rows[0]}
        for name, rows in samples.items()
    }


def render(
    by_mode: dict[str, dict[str, dict[str, float]]],
    command: str,
    runs: int,
    settle_s: float,
    loads: list[tuple[float, float, float]],
) -> str:
    lines = [
        SECTION,
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{len(os.sched_getaffinity(0))} cores, Linux {platform.release()}). "
        f"{runs} runs, medians. Load average (1, 5, 15 min) at the start of each mode: "
        + "; ".join(" ".join(f"{x:.2f}" for x in load) for load in loads)
        + " (2 cores: a load above that means other work shared the cores).",
        "",
        "One environment that starts no program of its own (the apps are lazy: only a "
        "task's `launch` step starts one). Each app is started alone by OSWorld's own "
        "launch command, as the environment's user where its programs run (its sandbox, or "
        "in `containers` mode its container), from a home the template just restored; "
        "'start' is the time from the launch to the app's main window (class and title, "
        f"past any splash screen); after {settle_s:g} s more, 'CPU s' is the CPU time the "
        "environment's processes spent since the launch, and 'RSS' and 'PSS' what they hold "
        "beyond what they held before it (RSS counts a shared page once per process; PSS "
        "divides it among the processes that map it). Then the environment is reset, "
        "which ends the app. Baseline (same run): the environment with nothing launched, "
        "over the same time: its CPU time, and all it holds (its display server, session "
        "bus, sandbox). 'x env' is the memory the app adds against what the empty "
        "environment holds.",
        "",
        "| mode | app | start s | CPU s | RSS MB | PSS MB | PSS x env | reset s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, figures in by_mode.items():
        base = figures["nothing"]
        lines.append(
            f"| {mode} | nothing launched (baseline) | - | {base['cpu']:.2f} | "
            f"{base['rss']:.0f} | {base['pss']:.0f} | 1.0 | {base['reset']:.2f} |"
        )
        for app in APPS:
            f = figures[app.name]
            lines.append(
                f"| {mode} | {app.name} | {f['start']:.2f} | {f['cpu']:.2f} | {f['rss']:.0f} | "
                f"{f['pss']:.0f} | {f['pss'] / base['pss']:.1f} | {f['reset']:.2f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    """Measure and write the section."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default="sandbox,containers")
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    by_mode, loads = {}, []
    for mode in modes:
        loads.append(os.getloadavg())
        by_mode[mode] = measure_mode(mode == "containers", args.runs, args.settle)
    command = ".venv/bin/python bench/apps.py" + "".join(
        f" {a}" for a in sys.argv[1:] if a != "--no-write"
    )
    text = render(by_mode, command, args.runs, args.settle, loads)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
