"""Time of the verify phase per trial in each mode, on a small work dir and on a venv.

    .venv/bin/python bench/verify_modes.py [--trials 12] [--no-write]

One run measures every mode, trials interleaved (shared, cleared, sealed, shared, ...)
so that drift on a shared machine hits all three alike. The verify phase is from the end
of the agent phase to the decided outcome: for shared and cleared, copying the tests,
running test.sh and reading the reward in the agent container; for sealed, freezing the
agent container, reading its diff, archiving its state paths, starting the verifier
container from the pristine image, installing the state, running test.sh and reading the
reward on the host. Removing containers afterwards is reported separately as teardown.
Two tasks: ``fix-median`` (a one-file work dir) and ``venv-tool`` (a venv of about 2,000
files in the work dir, the state sealed mode carries over). The figures are written to
the ``## Container verify phase`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import load_task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task
from results_md import write_section

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("fix-median", "venv-tool")
SECTION = "## Container verify phase"
AIM_S = 0.2  # sealed's added time per trial over shared that it aims for
MODES = (Mode.SHARED, Mode.CLEARED, Mode.SEALED)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=12, help="trials per mode (at least 10)")
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args()
    if args.trials < 10:
        parser.error("at least 10 trials per mode")

    labels = {"cleanroom.bench": "1", "cleanroom.session": uuid.uuid4().hex[:12]}
    runtime = DockerRuntime.connect(labels)
    sections = []
    load_start = os.getloadavg()[0]
    try:
        for name in TASKS:
            measured = measure(runtime, name, args.trials)
            if measured is None:
                return 1
            sections.append(table(name, *measured))
    finally:
        runtime.remove_labelled(labels)

    text = "\n".join(
        [
            SECTION,
            "",
            f"Command: `.venv/bin/python bench/verify_modes.py --trials {args.trials}` "
            f"({datetime.now(UTC):%Y-%m-%d}, {machine()}, Docker {docker_version(runtime)}).",
            "",
            f"Each task with its solution; {args.trials} trials per mode, interleaved, after one "
            "warm-up each. Verify phase = end of the agent phase to the decided outcome; "
            "teardown (removing containers) is separate. The verify phase's steps are "
            "cleanroom's own timings of each rollout (median seconds; steps that overlap "
            "the agent phase, such as starting sealed's verifier container, are not in it). "
            f"The 1-minute load average was {load_start:.1f} at the start and "
            f"{os.getloadavg()[0]:.1f} at the end.",
            "",
            *sections,
        ]
    )
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
    return 0


Times = dict[Mode, list[float]]
Steps = dict[Mode, list[dict[str, float]]]
# The steps of the verify phase, as the rollout times them (the agent's own are left out).
VERIFY_STEPS = ("freeze_s", "install_s", "links_s", "start_s", "setup_s", "test_s", "read_s")


def measure(runtime: DockerRuntime, name: str, trials: int) -> tuple[Times, Times, Steps] | None:
    """Verify and teardown times and the verify phase's steps per mode for one task, or
    None on a wrong outcome."""
    task = load_task(ROOT / "examples" / "tasks" / name)
    runtime.images.for_task(task)
    verify_times: Times = {m: [] for m in MODES}
    teardown_times: Times = {m: [] for m in MODES}
    steps: Steps = {m: [] for m in MODES}
    for mode in MODES:  # one untimed warm-up per mode
        verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(mode))
    for trial in range(trials):
        for mode in MODES:
            started = time.monotonic()
            outcome = verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(mode))
            elapsed = time.monotonic() - started
            if outcome.score != 1.0:
                print(f"{name} trial {trial} {mode}: unexpected {outcome}", file=sys.stderr)
                return None
            timings = outcome.details["timings"]
            verify_times[mode].append(timings["verify_s"])
            teardown_times[mode].append(elapsed - timings["total_s"])
            steps[mode].append(timings)
        print(f"{name}: trial {trial + 1}/{trials} done", file=sys.stderr)
    return verify_times, teardown_times, steps


def table(name: str, verify_times: Times, teardown_times: Times, steps: Steps) -> str:
    """One task's Markdown table and sealed's overhead over shared."""
    med = {m: statistics.median(v) for m, v in verify_times.items()}
    lines = [
        f"`examples/tasks/{name}`:",
        "",
        "| mode | median s | p25–p75 s | min–max s | teardown median s |",
        "|---|---|---|---|---|",
    ]
    for mode in MODES:
        values = sorted(verify_times[mode])
        q1, _, q3 = statistics.quantiles(values, n=4)
        lines.append(
            f"| {mode.value} | {med[mode]:.3f} | {q1:.3f}–{q3:.3f} | "
            f"{values[0]:.3f}–{values[-1]:.3f} | {statistics.median(teardown_times[mode]):.3f} |"
        )
    overhead = med[Mode.SEALED] - med[Mode.SHARED]
    ratio = med[Mode.SEALED] / med[Mode.SHARED]
    verdict = "met" if overhead <= AIM_S else "NOT met"
    lines += [
        "",
        f"Sealed over shared, same run: **{overhead:+.3f} s per trial** (median), ratio "
        f"**{ratio:.2f}×**. Aim: +{AIM_S} s or less — {verdict}.",
        "",
        "| mode | " + " | ".join(s.removesuffix("_s") for s in VERIFY_STEPS) + " |",
        "|---|" + "---|" * len(VERIFY_STEPS),
    ]
    for mode in MODES:
        cells = []
        for step in VERIFY_STEPS:
            seen = [t[step] for t in steps[mode] if step in t]
            cells.append(f"{statistics.median(seen):.3f}" if seen else "-")
        lines.append(f"| {mode.value} | " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


def machine() -> str:
    return f"{os.cpu_count()} cores, Linux {platform.release()}, Python {platform.python_version()}"


def docker_version(runtime: DockerRuntime) -> str:
    info = runtime.docker.api.version()
    return f"{info.get('Version', '?')} (API {info.get('ApiVersion', '?')})"


if __name__ == "__main__":
    sys.exit(main())
