"""OSWorld's interface over the pool: what one ``step`` costs, by kind of action and by
how the agent reaches it, as ratios to a bare screenshot of the same environment.

    .venv/bin/python bench/osworld_interface.py [--steps 20] [--no-write]

One pool environment running Writer and a terminal (plain mode, no warm standby). Each
row times ``--steps`` steps with no pause (the median and the 90th percentile):

- a screenshot alone, through the pool: the baseline (every step returns one);
- a ``computer_13`` ``MOVE_TO``: translated into a policy action;
- a ``computer_13`` ``SCROLL`` (0, 0): run as the pyautogui calls OSWorld's controller
  sends, two programs in the environment's sandbox;
- ``pyautogui`` code (``pass``): one program in the sandbox, as OSWorld's server runs it;
- the same code over HTTP (`OSWorldHTTPEnv` on loopback), with the observation's PNG in
  base64;
- the same code with the accessibility tree in the observation (OSWorld's default).

OSWorld's own ``DesktopEnv`` needs a virtual machine, which this machine cannot run, so
no row is OSWorld's. Writes the ``## OSWorld interface: the cost of a step`` section of
bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.policy.http import env_key
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.rollouts.osworld_desktop_env import OSWorldDesktopEnv
from cleanroom.rollouts.osworld_http import OSWorldHTTPEnv, PoolEnvs, build_osworld_app, serving
from results_md import write_section

SECTION = "## OSWorld interface: the cost of a step"
KEY = "bench-key"


@dataclass(frozen=True)
class Row:
    label: str
    times_s: list[float]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_s) * 1000

    @property
    def p90_ms(self) -> float:
        ordered = sorted(self.times_s)
        return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))] * 1000


def _timed(label: str, steps: int, call: Callable[[], Any]) -> Row:
    call()  # the first is a warm-up: programs and connections started once
    times = []
    for _ in range(steps):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return Row(label, times)


def measure(steps: int) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-osworld-") as run_dir:
        pool = Pool(
            PoolConfig(envs=1, programs=("writer", "terminal"), warm_standby=False),
            Path(run_dir),
        )
        pool.start()
        try:
            handle = LocalHandle(pool, "env01")
            plain = OSWorldDesktopEnv(handle, action_space="computer_13", require_a11y_tree=False)
            code = OSWorldDesktopEnv(handle, action_space="pyautogui", require_a11y_tree=False)
            tree = OSWorldDesktopEnv(handle, action_space="pyautogui", require_a11y_tree=True)
            rows = [
                _timed("screenshot alone (baseline)", steps, handle.screenshot),
                _timed(
                    "computer_13 MOVE_TO (a policy action)",
                    steps,
                    lambda: plain.step({"action_type": "MOVE_TO", "x": 400, "y": 300}, 0),
                ),
                _timed(
                    "computer_13 SCROLL (two pyautogui programs)",
                    steps,
                    lambda: plain.step({"action_type": "SCROLL", "dx": 0, "dy": 0}, 0),
                ),
                _timed("pyautogui code, in process", steps, lambda: code.step("pass", 0)),
            ]
            app = build_osworld_app(PoolEnvs(pool, require_a11y_tree=False), KEY)
            with serving(app) as url:
                client = OSWorldHTTPEnv(url, "env01", env_key(KEY, "env01"))
                rows.append(
                    _timed("pyautogui code, over HTTP", steps, lambda: client.step("pass", 0))
                )
                client.close()
            rows.append(
                _timed(
                    "pyautogui code, with the accessibility tree",
                    max(3, steps // 4),
                    lambda: tree.step("pass", 0),
                )
            )
            return rows
        finally:
            pool.stop()


def render(rows: list[Row], steps: int) -> str:
    base = rows[0].median_ms
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        SECTION,
        "",
        f"Command: `.venv/bin/python bench/osworld_interface.py --steps {steps}` ({when}, "
        f"{os.cpu_count()} cores, Linux {platform.release()}, Python "
        f"{platform.python_version()}). One environment with Writer and a terminal; no "
        "pause; a quarter as many steps with the tree.",
        "",
        "| step | median | p90 | median / screenshot |",
        "|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.label} | {row.median_ms:.0f} ms | {row.p90_ms:.0f} ms | "
            f"{row.median_ms / base:.1f}x |"
        )
    lines += [
        "",
        "Every step returns a screenshot, so the baseline is the floor of a step. Code runs",
        "as a new Python in the environment's sandbox for each call (as OSWorld's server",
        "starts one per call); the accessibility tree is read from the environment's own",
        "AT-SPI bus by its reader. OSWorld's own environment needs a virtual machine,",
        "which this machine cannot run: no row is OSWorld's.",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="steps a row")
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args()
    rows = measure(args.steps)
    text = render(rows, args.steps)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
