"""Sealed through Harbor against Harbor's own verifier, per trial, on docker and podman,
by the Docker fast path and by the generic path (Harbor's environment interface).

    .venv/bin/python bench/harbor_verifier.py [--rounds 2] [--attempts 4] [--no-write]

One run measures both verifiers on both of Harbor's local environments, on fix-median and
csv-report with the oracle. Each job is one `harbor run` of ``--attempts`` trials of one
task, one after another in one process, as a loop that verifies many rollouts of a task
runs them. Jobs are interleaved (Harbor's verifier, SealedVerifier, the generic path,
Harbor's, ...) for ``--rounds`` rounds, so that drift on a shared machine hits all alike.
Harbor's default budget applies (no multiplier): SealedVerifier's first verification of a
task in a process runs its pristine control beside it, and later ones share it.

Each trial's phases are read from Harbor's result.json: the verifier's phase, from Harbor
handing over to the reward, and the whole trial. The first trial of each job (the cold
one) is reported apart from the rest. Every trial must score 1. The figures are written
to the ``## Verifying under Harbor`` section of bench/RESULTS.md.
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
import uuid
from datetime import UTC, datetime
from pathlib import Path

from cleanroom.docker_layer import PODMAN_HOST
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from results_md import write_section

ROOT = Path(__file__).resolve().parents[1]
HARBOR = ROOT / ".venv-harbor" / "bin" / "harbor"
TASKS = ("fix-median", "csv-report")
SECTION = "## Verifying under Harbor"
SEALED = "cleanroom.integrations.harbor:SealedVerifier"
VERIFIERS = {
    "Harbor's verifier": (),
    "SealedVerifier": ("--verifier", SEALED),
    "SealedVerifier, generic path": ("--verifier", SEALED, "--verifier-kwarg", "path=generic"),
}
ENVIRONMENTS = ("docker", "podman")
# One trial's (verifier phase s, whole trial s), and whether it was its job's first.
Trial = tuple[float, float, bool]


def seconds(phase: dict[str, str]) -> float:
    start = datetime.fromisoformat(phase["started_at"])
    end = datetime.fromisoformat(phase["finished_at"])
    return (end - start).total_seconds()


def one_job(
    environment: str, task: str, verifier: tuple[str, ...], attempts: int, env: dict[str, str]
) -> list[Trial]:
    """One `harbor run` of ``attempts`` trials of ``task``, one at a time; each trial's
    phases in the order they started. Exits on a wrong reward."""
    with tempfile.TemporaryDirectory(prefix="cleanroom-bench-harbor-") as jobs:
        argv = [str(HARBOR), "run", "-p", str(ROOT / "examples" / "tasks" / task)]
        argv += ["--env", environment, "-a", "oracle", *verifier]
        argv += ["-o", jobs, "-n", "1", "-k", str(attempts), "-y"]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
        found = [json.loads(p.read_text()) for p in Path(jobs).glob("*/*/result.json")]
        if done.returncode != 0 or len(found) != attempts:
            sys.exit(f"harbor run failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    found.sort(key=lambda r: r["started_at"])
    trials: list[Trial] = []
    for n, result in enumerate(found):
        rewards = (result.get("verifier_result") or {}).get("rewards") or {}
        if rewards.get("reward") != 1.0:
            sys.exit(
                f"{environment} {task} {verifier}: the oracle scored {rewards}: "
                f"{result['exception_info']}"
            )
        trial = {"started_at": result["started_at"], "finished_at": result["finished_at"]}
        trials.append((seconds(result["verifier"]), seconds(trial), n == 0))
    return trials


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="jobs per verifier, task, env")
    parser.add_argument("--attempts", type=int, default=4, help="trials per job")
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args()
    if not HARBOR.is_file():
        sys.exit("no .venv-harbor: run `make setup`")
    labels = {"cleanroom.bench": "1", "cleanroom.session": uuid.uuid4().hex[:12]}
    env = {
        **os.environ,
        "CLEANROOM_LABELS": ",".join(f"{k}={v}" for k, v in labels.items()),
        "PATH": os.pathsep.join([str(HARBOR.parent), os.environ.get("PATH", "")]),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONPATH": str(ROOT / "src"),
    }
    times: dict[tuple[str, str, str], list[Trial]] = {}
    load_start = os.getloadavg()
    try:
        for environment in ENVIRONMENTS:
            for _ in range(args.rounds):
                for task in TASKS:
                    for name, verifier in VERIFIERS.items():
                        measured = one_job(environment, task, verifier, args.attempts, env)
                        times.setdefault((environment, task, name), []).extend(measured)
                        shown = " ".join(f"{v:.2f}" for v, _, _ in measured)
                        print(environment, task, name, shown, flush=True)
    finally:
        for host in (None, PODMAN_HOST):
            DockerRuntime.connect(labels, host=host).remove_labelled(labels, images=False)
    text = report(times, args, load_start)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
    return 0


def report(
    times: dict[tuple[str, str, str], list[Trial]],
    args: argparse.Namespace,
    load_start: tuple[float, float, float],
) -> str:
    day = datetime.now(UTC).date().isoformat()
    harbor = subprocess.run([str(HARBOR), "--version"], capture_output=True, text=True)
    lines = [
        SECTION,
        "",
        f"Command: `.venv/bin/python bench/harbor_verifier.py` ({day}, "
        f"{os.cpu_count()} cores, Linux {platform.release()}, Harbor "
        f"{harbor.stdout.strip()}, {shutil.which('podman') and 'podman 4.3'}).",
        "",
        f"`harbor run` of each task with the oracle, {args.attempts} trials a job one after "
        f"another, {args.rounds} jobs per verifier, task and environment, interleaved, in "
        "Harbor's default budget; every trial scored 1. *Later trials* are every trial but "
        "each job's first: the steady state of a loop that verifies many rollouts of a task "
        "(SealedVerifier shares the first one's pristine control). Load average at the "
        f"start: {' '.join(f'{x:.2f}' for x in load_start)}. Medians.",
        "",
        "| environment | task | verifier | phase s, later trials | ratio to Harbor's "
        "| phase s, first trial | whole trial s |",
        "|---|---|---|---|---|---|---|",
    ]
    for environment in ENVIRONMENTS:
        for task in TASKS:
            base = _median(times[(environment, task, "Harbor's verifier")], first=False)
            for name in VERIFIERS:
                runs = times[(environment, task, name)]
                later = _median(runs, first=False)
                first = _median(runs, first=True)
                trial = statistics.median(t for _, t, _ in runs)
                lines.append(
                    f"| {environment} | {task} | {name} | {later:.2f} | {later / base:.2f} "
                    f"| {first:.2f} | {trial:.2f} |"
                )
    lines += [
        "",
        "SealedVerifier's phase stops the agent's processes, reads its container's diff, "
        "copies its state out, starts a fresh container of the pristine image, runs the "
        "tests and reads the reward on the host; a job's first trial also runs the pristine "
        "control and the solution's control beside it. From the second trial on, the fresh "
        "container is a warm spare, started after the trial before it while the next "
        "agent acted (`verifier_container: spare`), so its start is off the phase. What "
        "is left is sealed's own work: stopping and reading the agent's container, "
        "installing the state in another, and reading the reward from outside (about "
        "0.3, 0.2 and 0.1 s on docker's fix-median). Harbor's verifier runs the tests in "
        "the agent's own container.",
        "",
        "The generic path does the same through Harbor's environment interface alone: each "
        "fresh environment is a Compose project started by Harbor (its clock, processes and "
        "folders set in one command, the pristine listing taken once per task image in a "
        "process), the agent's changes are two listings compared, and files move in bulk: "
        "one command and one `compose cp` per state path out, one for the whole state in, "
        "one for the reward folder back. Stopping its fresh "
        "environments is started in the background and waited for at the end of the "
        "verification, so it is inside the phase.",
        "",
        "The whole trial is shorter under SealedVerifier for a reason outside verification: "
        "it leaves the agent's container with its processes killed, while after Harbor's "
        "verifier the container still runs `sleep infinity` as its first process, which "
        "ignores the stop signal, so Harbor's teardown waits out the engine's 10 s stop "
        "timeout.",
    ]
    return "\n".join(lines) + "\n"


def _median(runs: list[Trial], *, first: bool) -> float:
    return statistics.median(v for v, _, is_first in runs if is_first is first)


if __name__ == "__main__":
    sys.exit(main())
