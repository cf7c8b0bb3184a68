"""Time of the verify phase per trial in each mode, on the same small pytest task.

    .venv/bin/python bench/verify_modes.py [--trials 12] [--no-write]

One run measures every mode, trials interleaved (shared, cleared, sealed, shared, ...)
so that drift on a shared machine hits all three alike. The verify phase is from the end
of the agent phase to the decided outcome: for shared and cleared, copying the tests,
running test.sh and reading the reward in the agent container; for sealed, freezing the
agent container, reading its diff, committing the snapshot, starting the verifier
container, running test.sh and reading the reward on the host. Removing containers and
the snapshot afterwards is reported separately as teardown. The figures are written to
the ``## Container verify phase`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from cleanroom.verifiers.container.docker_runtime import DockerRuntime
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.task import load_task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task
from results_md import write_section

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "examples" / "tasks" / "fix-median"
SECTION = "## Container verify phase"
AIM_S = 0.5
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
    task = load_task(TASK)
    runtime.image_for(task)
    verify_times: dict[Mode, list[float]] = {m: [] for m in MODES}
    teardown_times: dict[Mode, list[float]] = {m: [] for m in MODES}
    try:
        for mode in MODES:  # one untimed warm-up per mode
            verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(mode))
        for trial in range(args.trials):
            for mode in MODES:
                started = time.monotonic()
                outcome = verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(mode))
                elapsed = time.monotonic() - started
                if outcome.score != 1.0:
                    print(f"trial {trial} {mode}: unexpected outcome {outcome}", file=sys.stderr)
                    return 1
                timings = outcome.details["timings"]
                verify_times[mode].append(timings["verify_s"])
                teardown_times[mode].append(elapsed - timings["total_s"])
            print(f"trial {trial + 1}/{args.trials} done", file=sys.stderr)
    finally:
        runtime.remove_labelled(labels)

    text = report(verify_times, teardown_times, args.trials, docker_version(runtime))
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
    return 0


def report(
    verify_times: dict[Mode, list[float]],
    teardown_times: dict[Mode, list[float]],
    trials: int,
    docker: str,
) -> str:
    """The Markdown section: command, date, machine, table, and sealed's overhead."""
    med = {m: statistics.median(v) for m, v in verify_times.items()}
    lines = [
        SECTION,
        "",
        f"Command: `.venv/bin/python bench/verify_modes.py --trials {trials}` "
        f"({datetime.now(UTC):%Y-%m-%d}, {machine()}, Docker {docker}).",
        "",
        f"Task: `examples/tasks/fix-median` with its solution (4 pytest tests); {trials} "
        "trials per mode, interleaved, after one warm-up each. Verify phase = end of the "
        "agent phase to the decided outcome; teardown (removing containers and the "
        "snapshot) is separate.",
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
    verdict = "met" if overhead < AIM_S else "NOT met"
    lines += [
        "",
        f"Sealed over shared, same run: **+{overhead:.3f} s per trial** (median), "
        f"ratio **{ratio:.2f}×**. Aim: under {AIM_S} s — {verdict}.",
        "",
    ]
    return "\n".join(lines)


def machine() -> str:
    import os

    return f"{os.cpu_count()} cores, Linux {platform.release()}, Python {platform.python_version()}"


def docker_version(runtime: DockerRuntime) -> str:
    info = runtime.api.version()
    return f"{info.get('Version', '?')} (API {info.get('ApiVersion', '?')})"


if __name__ == "__main__":
    sys.exit(main())
