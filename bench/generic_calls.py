"""The calls SealedVerifier's generic path makes through Harbor's environment interface in
Harbor's verifier phase, per trial, and the phase's length.

    .venv/bin/python bench/generic_calls.py [--task fix-median] [--attempts 2] [--src SRC]

One `harbor run` of ``--attempts`` trials of the task with the oracle, on Harbor's docker
environment through a subclass of it (`CountedDocker`, given to Harbor by its import path)
that writes a line for each ``exec``, upload, download, start and stop. The lines whose
call started inside a trial's verifier phase are that trial's: the agent's environment's
and the fresh environments' (the verification's and its controls'). ``--src`` runs another
checkout's cleanroom (its ``src`` folder), to compare two versions on one machine.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HARBOR = ROOT / ".venv-harbor" / "bin" / "harbor"
SEALED = "cleanroom.integrations.harbor:SealedVerifier"
# Where CountedDocker writes its lines (set for the `harbor run` it is given to).
LOG_VARIABLE = "CLEANROOM_BENCH_CALLS_LOG"
KINDS = ("exec", "upload_file", "upload_dir", "download_file", "download_dir", "start", "stop")


def counted_docker() -> type[Any]:
    """Harbor's docker environment, each call of `KINDS` written to the log as
    ``<start time> <session> <kind>``."""
    from harbor.environments.docker.docker import DockerEnvironment

    def counted(kind: str) -> Any:
        own = getattr(DockerEnvironment, kind)

        async def call(self: DockerEnvironment, *args: Any, **kwargs: Any) -> Any:
            with open(os.environ[LOG_VARIABLE], "a", encoding="utf-8") as log:
                log.write(f"{time.time():.3f} {self.session_id} {kind}\n")
            return await own(self, *args, **kwargs)

        return call

    return type("CountedDocker", (DockerEnvironment,), {k: counted(k) for k in KINDS})


if os.environ.get(LOG_VARIABLE):  # imported by Harbor, as the environment's class
    CountedDocker = counted_docker()


def seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="fix-median")
    parser.add_argument("--attempts", type=int, default=2, help="trials in the job")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="cleanroom's src")
    args = parser.parse_args()
    if not HARBOR.is_file():
        sys.exit("no .venv-harbor: run `make setup`")
    with tempfile.TemporaryDirectory(prefix="cleanroom-bench-calls-") as scratch:
        log = Path(scratch) / "calls.log"
        log.touch()
        env = {
            **os.environ,
            LOG_VARIABLE: str(log),
            "PYTHONPATH": os.pathsep.join([str(args.src), str(ROOT / "bench")]),
            "PATH": os.pathsep.join([str(HARBOR.parent), os.environ.get("PATH", "")]),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        jobs = Path(scratch) / "jobs"
        argv = [str(HARBOR), "run", "-p", str(ROOT / "examples" / "tasks" / args.task)]
        argv += ["--env", "generic_calls:CountedDocker", "-a", "oracle", "--verifier", SEALED]
        argv += ["--verifier-kwarg", "path=generic", "-o", str(jobs), "-n", "1"]
        argv += ["-k", str(args.attempts), "-y"]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            sys.exit(f"harbor run failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        results = [json.loads(p.read_text()) for p in jobs.glob("*/*/result.json")]
        calls = [line.split() for line in log.read_text().splitlines()]
    for result in sorted(results, key=lambda r: r["started_at"]):
        start, end = (seconds(result["verifier"][k]) for k in ("started_at", "finished_at"))
        inside = collections.Counter(kind for at, _, kind in calls if start <= float(at) <= end)
        rewards = (result.get("verifier_result") or {}).get("rewards") or {}
        print(
            f"{args.task}: reward {rewards.get('reward')}, verifier phase {end - start:.2f} s, "
            f"{sum(inside.values())} calls {dict(inside)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
