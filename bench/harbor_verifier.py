"""Sealed through Harbor against Harbor's own verifier, per trial, on docker and podman,
by the Docker fast path and by the generic path (Harbor's environment interface).

    .venv/bin/python bench/harbor_verifier.py [--trials 5] [--no-write]

One run measures both verifiers on both of Harbor's local environments. It runs real
`harbor run` jobs of one trial each, with the oracle on fix-median, interleaved (Harbor's
verifier, SealedVerifier, Harbor's, ...) so that drift on a shared machine hits both
alike. Harbor's default budget applies (no multiplier), so SealedVerifier runs its
pristine control beside the verification.

Each trial's phases are read from Harbor's result.json:
- the verifier's phase, from Harbor handing over to the reward;
- the whole trial.
Every trial must score 1. The figures are written to the ``## Verifying under Harbor``
section of bench/RESULTS.md.
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
TASK = ROOT / "examples" / "tasks" / "fix-median"
SECTION = "## Verifying under Harbor"
SEALED = "cleanroom.integrations.harbor:SealedVerifier"
VERIFIERS = {
    "Harbor's verifier": (),
    "SealedVerifier": ("--verifier", SEALED),
    "SealedVerifier, generic path": ("--verifier", SEALED, "--verifier-kwarg", "path=generic"),
}
ENVIRONMENTS = ("docker", "podman")


def seconds(phase: dict[str, str]) -> float:
    start = datetime.fromisoformat(phase["started_at"])
    end = datetime.fromisoformat(phase["finished_at"])
    return (end - start).total_seconds()


def one_trial(
    environment: str, verifier: tuple[str, ...], env: dict[str, str]
) -> tuple[float, float]:
    """One `harbor run` of one trial: (verifier phase s, trial s); exits on a wrong reward."""
    with tempfile.TemporaryDirectory(prefix="cleanroom-bench-harbor-") as jobs:
        argv = [str(HARBOR), "run", "-p", str(TASK), "--env", environment, "-a", "oracle"]
        argv += [*verifier, "-o", jobs, "-n", "1", "-y"]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        found = list(Path(jobs).glob("*/*/result.json"))
        if done.returncode != 0 or len(found) != 1:
            sys.exit(f"harbor run failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        result = json.loads(found[0].read_text())
    rewards = (result.get("verifier_result") or {}).get("rewards") or {}
    if rewards.get("reward") != 1.0:
        sys.exit(
            f"{environment} {verifier}: the oracle scored {rewards}: {result['exception_info']}"
        )
    trial = {"started_at": result["started_at"], "finished_at": result["finished_at"]}
    return seconds(result["verifier"]), seconds(trial)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5, help="trials per verifier and environment")
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
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    load_start = os.getloadavg()
    try:
        for environment in ENVIRONMENTS:
            for _ in range(args.trials):
                for name, verifier in VERIFIERS.items():
                    measured = one_trial(environment, verifier, env)
                    times.setdefault((environment, name), []).append(measured)
                    print(environment, name, f"{measured[0]:.2f} s", flush=True)
    finally:
        for host in (None, PODMAN_HOST):
            DockerRuntime.connect(labels, host=host).remove_labelled(labels, images=False)
    text = report(times, args.trials, load_start)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
    return 0


def report(
    times: dict[tuple[str, str], list[tuple[float, float]]],
    trials: int,
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
        f"`harbor run` of fix-median with the oracle, one trial a job, {trials} trials per "
        "verifier and environment, interleaved, in Harbor's default budget (SealedVerifier "
        "runs its pristine control beside the verification); every trial scored 1. "
        f"Load average at the start: {' '.join(f'{x:.2f}' for x in load_start)}. Medians.",
        "",
        "| environment | verifier | verifier phase s | ratio to Harbor's | whole trial s |",
        "|---|---|---|---|---|",
    ]
    for environment in ENVIRONMENTS:
        base = statistics.median(v for v, _ in times[(environment, "Harbor's verifier")])
        for name in VERIFIERS:
            phase = statistics.median(v for v, _ in times[(environment, name)])
            trial = statistics.median(t for _, t in times[(environment, name)])
            lines.append(
                f"| {environment} | {name} | {phase:.2f} | {phase / base:.2f} | {trial:.2f} |"
            )
    lines += [
        "",
        "SealedVerifier's phase stops the agent's processes, reads its container's diff, "
        "copies its state out, starts a fresh container of the pristine image (and a second "
        "one, the pristine control's, beside it), runs the tests and reads the reward on the "
        "host. Harbor's verifier runs the tests in the agent's own container.",
        "",
        "The generic path does the same through Harbor's environment interface alone: each "
        "fresh environment is a Compose project started by Harbor (with its clock, processes "
        "and a listing of its filesystem read once), the agent's changes are two listings "
        "compared, and every file moves by a command and a `compose cp`. Stopping its fresh "
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


if __name__ == "__main__":
    sys.exit(main())
