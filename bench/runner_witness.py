"""What the runner witness costs a pytest run, against the same run without it.

    .venv/bin/python bench/runner_witness.py [--trials 20] [--no-write]

Three configurations of the same pytest command, trials interleaved so that drift hits
all alike: plain Python; the sealed verifier's environment without the witness (the
start-up hook that moves the agent's state off ``sys.path``); and that environment with
the witness (the plugin, its records and its audit hook). Two suites: fix-median's own
four tests with its fixed module, and 500 generated tests that each import a module of
the state and open a file (every open is an event the audit hook looks at). Wall time of
the whole process, median of the trials. Written to the ``## Runner witness`` section of
bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from cleanroom.verifiers.container.run.context import PYTHON_GUARD_SOURCE
from results_md import write_section

ROOT = Path(__file__).resolve().parents[1]
GUARD = PYTHON_GUARD_SOURCE
SECTION = "## Runner witness"
CONFIGS = ("plain", "guard", "guard + witness")

MANY = """\
import pytest
import stats


@pytest.mark.parametrize("n", range(500))
def test_each(n, tmp_path):
    (tmp_path / "x").write_text(str(n))
    assert stats.median([n, n + 1, n + 2]) == n + 1
"""


def suites(base: Path) -> dict[str, tuple[Path, Path]]:
    """Each suite's work dir and test file."""
    task = ROOT / "examples" / "tasks" / "fix-median"
    found: dict[str, tuple[Path, Path]] = {}
    for name, test in (("fix-median (4 tests)", None), ("500 tests", MANY)):
        root = base / name.split()[0]
        app, tests = root / "app", root / "tests"
        app.mkdir(parents=True)
        shutil.copytree(task / "tests", tests)
        fixed = (task / "solution" / "solve.sh").read_text().split("<<'PY'\n", 1)[1]
        (app / "stats.py").write_text(fixed.rsplit("PY\n", 1)[0])
        target = tests / "test_median.py"
        if test is not None:
            target = tests / "test_many.py"
            head = f"import sys\nsys.path.insert(0, {str(app)!r})\nimport stats"
            target.write_text(test.replace("import stats", head))
        (tests / "test_median.py").write_text(
            (tests / "test_median.py").read_text().replace('"/app"', repr(str(app)))
        )
        found[name] = (app, target)
    return found


def environment(config: str, app: Path, scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "CLEANROOM"))}
    if config == "plain":
        return env
    env.update(
        PYTHONSAFEPATH="1",
        PYTHONNOUSERSITE="1",
        PYTHONPATH=str(GUARD),
        CLEANROOM_STATE=json.dumps([str(app)]),
    )
    if config == "guard + witness":
        witness = scratch / "witness"
        shutil.rmtree(witness, ignore_errors=True)
        witness.mkdir()
        env.update(
            CLEANROOM_WITNESS=str(witness),
            CLEANROOM_WITNESS_PLUGIN="cleanroom_witness_bench",
            CLEANROOM_PLACES=json.dumps({"sealed": [str(scratch / "reward")], "shipped": []}),
        )
    return env


def run_once(config: str, app: Path, test: Path, scratch: Path) -> float:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    argv += ["-p", "no:xdist", str(test)]
    env = environment(config, app, scratch)
    started = time.monotonic()
    done = subprocess.run(argv, cwd=app, env=env, capture_output=True, text=True, timeout=300)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{config}: pytest exited {done.returncode}: {done.stdout[-2000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20, help="trials per configuration")
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="cleanroom-bench-witness-"))
    lines: list[str] = []
    try:
        for name, (app, test) in suites(base).items():
            times: dict[str, list[float]] = {c: [] for c in CONFIGS}
            for config in CONFIGS:  # one untimed warm-up each
                run_once(config, app, test, base)
            for trial in range(args.trials):
                for config in CONFIGS:
                    times[config].append(run_once(config, app, test, base))
                print(f"{name}: trial {trial + 1}/{args.trials}", file=sys.stderr)
            med = {c: statistics.median(v) for c, v in times.items()}
            added, ratio = (
                med["guard + witness"] - med["guard"],
                med["guard + witness"] / med["guard"],
            )
            lines += [
                f"{name}:",
                "",
                "| configuration | median s | min–max s |",
                "|---|---|---|",
                *(
                    f"| {c} | {med[c]:.3f} | {min(times[c]):.3f}–{max(times[c]):.3f} |"
                    for c in CONFIGS
                ),
                "",
                f"The witness over the guard alone, same run: **{added:+.3f} s** "
                f"(ratio **{ratio:.2f}×**); the guard and witness "
                f"over plain Python: {med['guard + witness'] / med['plain']:.2f}×.",
                "",
            ]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    text = "\n".join(
        [
            SECTION,
            "",
            f"Command: `.venv/bin/python bench/runner_witness.py --trials {args.trials}` "
            f"({datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores, Linux {platform.release()}, "
            f"Python {platform.python_version()}, the host's pytest).",
            "",
            "Wall time of one `python -m pytest -q` process, its trials interleaved across "
            "the three configurations after one warm-up each: plain Python; the sealed "
            "verifier's environment without the witness (the start-up hook); with the "
            "witness (its plugin, records and audit hook).",
            "",
            *lines,
        ]
    )
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
