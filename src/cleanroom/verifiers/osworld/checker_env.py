"""OSWorld's own metric functions, run in a checker environment of their own.

Most of OSWorld's metrics are not re-implemented here: they are called from PyPI's
``desktop-env`` itself, so they are OSWorld's by construction. Its declared requirements
are a whole agent stack, so the checker environment is a Python of its own (``make
setup`` builds ``.venv-osworld``) with desktop-env installed without them and only the
libraries its metric modules use; `checker_env_worker` loads the one module a metric
lives in.

Those functions parse what the agent left (spreadsheets, documents, archives, images),
so each call runs in a sandbox made for it with bubblewrap: no network, nothing of the
machine but the system's programs and libraries and that Python, read-only; the call's
files are copied into a private ``/tmp``; its address space, CPU time and file sizes are
bounded (``setrlimit``), and a wall-clock limit ends it. A metric cannot reach the
harness, another rollout or the network, and what it prints is never read as an answer.

`run_metric` gives a typed `MetricAnswer`; `evaluator` decides what it means.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleanroom.verifiers.osworld.cached_file import CachedFile

WORKER = Path(__file__).with_name("checker_env_worker.py")
PYTHON_VARIABLE = "CLEANROOM_OSWORLD_PYTHON"
# Where the call's files are, inside the sandbox: staged read-only, and copied for use.
INPUTS = "/input"
CACHE = "/tmp/cache"
ANSWER_LIMIT = 64 * 1024


class CheckerEnvironmentMissing(RuntimeError):
    """The checker environment (a Python with desktop-env) or bubblewrap is not here."""


@dataclass(frozen=True)
class Limits:
    """What one metric call may use. CPU time, not wall time, is the agent-facing bound:
    it depends on the input alone, not on how busy the machine is."""

    cpu_s: int = 120
    wall_s: float = 300.0
    memory_bytes: int = 4 << 30
    file_bytes: int = 256 << 20
    tmp_bytes: int = 1 << 30


@dataclass(frozen=True)
class Returned:
    """The metric returned a number (a bool, or numpy's, is taken as OSWorld's sum takes it)."""

    value: float
    type_name: str


@dataclass(frozen=True)
class ReturnedOther:
    """The metric returned something that is not a number; ``self_check`` as in `Raised`."""

    text: str
    type_name: str
    self_check: MetricAnswer | None = None


@dataclass(frozen=True)
class Raised:
    """The metric raised. ``missing_library`` marks a library the environment lacks (the
    infrastructure's fault); ``self_check`` is the same metric on the expected state
    alone, when the caller asked for one."""

    error: str
    message: str
    missing_library: bool
    self_check: MetricAnswer | None = None


@dataclass(frozen=True)
class Stopped:
    """The call did not answer. ``by_input`` marks what the input can cause: the CPU,
    memory or file-size limit, or a crash (a signal) inside a library reading it; the
    wall-clock limit, a sandbox that did not start or an unreadable answer are not."""

    why: str
    by_input: bool


MetricAnswer = Returned | ReturnedOther | Raised | Stopped


@dataclass(frozen=True)
class OwnMetric:
    """One of OSWorld's metrics, called from desktop-env: its module under
    ``desktop_env/evaluators/metrics``."""

    name: str
    module: str


def _parse(data: Any) -> MetricAnswer:
    if not isinstance(data, dict):
        raise ValueError("the answer is not an object")
    if "value" in data:
        return Returned(float(data["value"]), str(data["type"]))
    check = data.get("self_check")
    if "returned" in data:
        return ReturnedOther(
            str(data["returned"]), str(data["type"]), _parse(check) if check is not None else None
        )
    return Raised(
        str(data["raised"]),
        str(data.get("message", "")),
        bool(data.get("missing_library")),
        _parse(check) if check is not None else None,
    )


def default_python() -> str:
    """The checker environment's Python: ``$CLEANROOM_OSWORLD_PYTHON``, else the
    ``.venv-osworld`` that ``make setup`` builds beside a checkout."""
    named = os.environ.get(PYTHON_VARIABLE)
    if named:
        return named
    return str(Path(__file__).resolve().parents[4] / ".venv-osworld" / "bin" / "python")


@functools.lru_cache(maxsize=8)
def _python_places(python: str) -> tuple[str, ...]:
    """The folders that Python needs to run: its environment and its base installation."""
    if not os.access(python, os.X_OK):
        raise CheckerEnvironmentMissing(
            f"no checker environment at {python} (make setup builds .venv-osworld; "
            f"{PYTHON_VARIABLE} names another)"
        )
    found = subprocess.run(
        [python, "-I", "-c", "import sys; print(sys.prefix); print(sys.base_prefix)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return tuple(dict.fromkeys(found.stdout.split()))


def _bwrap() -> str:
    found = shutil.which("bwrap")
    if found is None:
        raise CheckerEnvironmentMissing("bubblewrap (bwrap) is not installed (make setup)")
    return found


def sandbox_argv(python: str, inputs: str, limits: Limits) -> list[str]:
    """The bubblewrap command that runs the worker over ``inputs`` (pure but for lookups)."""
    argv = [
        _bwrap(),
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for name in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
        target = os.readlink(f"/{name}") if os.path.islink(f"/{name}") else None
        if target is not None:
            argv += ["--symlink", target, f"/{name}"]
    for path in ("/etc/ld.so.cache", "/etc/fonts", "/etc/localtime", "/etc/mime.types"):
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    for place in _python_places(python):
        argv += ["--ro-bind", place, place]
    argv += [
        "--ro-bind",
        str(WORKER),
        "/worker.py",
        "--ro-bind",
        inputs,
        INPUTS,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(limits.tmp_bytes),
        "--tmpfs",
        "/tmp",
        "--chdir",
        "/tmp",
        "--clearenv",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "LC_ALL",
        "C.UTF-8",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "PYTHONDONTWRITEBYTECODE",
        "1",
        python,
        "-I",
        "/worker.py",
    ]
    return argv


def _limiter(limits: Limits) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _staged(value: Any, cache_dir: str, inputs: Path, names: dict[str, str]) -> Any:
    """``value`` with each `CachedFile` written under ``inputs`` and named as in the cache."""
    if isinstance(value, list):
        return [_staged(v, cache_dir, inputs, names) for v in value]
    if not isinstance(value, CachedFile):
        return value
    relative = os.path.relpath(value.path, cache_dir)
    if relative.startswith(".."):
        relative = f"outside/{len(names)}/{os.path.basename(value.path)}"
    if relative not in names:
        target = inputs / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(value.data)
        names[relative] = value.path
    return {"$file": relative}


@dataclass(frozen=True)
class MetricCall:
    """One call to make: ``metric(*args, **options)``, and the self-check's arguments.

    ``args`` are getter values: JSON data, or `CachedFile`s (alone or in lists), which the
    metric receives as paths. With ``self_check``, a call that raised or returned no
    number is followed by one with those arguments, in the same sandbox.
    """

    metric: OwnMetric
    args: list[Any]
    options: dict[str, Any]
    self_check: list[Any] | None = None


def run_metric(
    metric: OwnMetric,
    args: list[Any],
    options: dict[str, Any],
    *,
    cache_dir: str,
    self_check: list[Any] | None = None,
    python: str | None = None,
    limits: Limits | None = None,
) -> MetricAnswer:
    """Call ``metric(*args, **options)`` in a sandbox of the checker environment (see
    `MetricCall`). Raises `CheckerEnvironmentMissing` when there is none to run in."""
    call = MetricCall(metric, args, options, self_check)
    return run_metrics([call], cache_dir=cache_dir, python=python, limits=limits)[0]


def run_metrics(
    calls: list[MetricCall],
    *,
    cache_dir: str,
    python: str | None = None,
    limits: Limits | None = None,
) -> list[MetricAnswer]:
    """Make the calls one after another in one sandbox, each answer in order. A sandbox
    that stops early gives its `Stopped` for every call (the limits are the batch's)."""
    limits = limits or Limits()
    python = python or default_python()
    with tempfile.TemporaryDirectory(prefix="cleanroom-metric-") as work:
        inputs = Path(work, "input")
        inputs.mkdir()
        names: dict[str, str] = {}

        def stage(values: list[Any] | None) -> list[Any] | None:
            if values is None:
                return None
            return [_staged(v, cache_dir, inputs, names) for v in values]

        batch = {
            "inputs": INPUTS,
            "cache": CACHE,
            "calls": [
                {
                    "module": c.metric.module,
                    "function": c.metric.name,
                    "args": stage(c.args),
                    "options": c.options,
                    "self_check": stage(c.self_check),
                }
                for c in calls
            ],
        }
        answer_path, log_path = Path(work, "answer"), Path(work, "log")
        argv = sandbox_argv(python, str(inputs), limits)
        with open(answer_path, "wb") as answer, open(log_path, "wb") as log:
            try:
                proc = subprocess.run(
                    argv,
                    input=json.dumps(batch).encode(),
                    stdout=answer,
                    stderr=log,
                    timeout=limits.wall_s,
                    preexec_fn=_limiter(limits),
                    check=False,
                )
            except subprocess.TimeoutExpired:
                stopped = Stopped(f"ran past its {limits.wall_s:g} s wall-clock limit", False)
                return [stopped] * len(calls)
        with open(answer_path, "rb") as fh:
            raw = fh.read(ANSWER_LIMIT * max(1, len(calls)))
        if proc.returncode != 0:
            return [_stopped(proc.returncode, _tail(log_path))] * len(calls)
        try:
            answers = json.loads(raw)["answers"]
            if not isinstance(answers, list) or len(answers) != len(calls):
                raise ValueError(f"{len(calls)} calls, another number of answers")
            return [_parse(a) for a in answers]
        except (ValueError, KeyError, TypeError) as exc:
            return [Stopped(f"answered no readable result ({exc})", False)] * len(calls)


def _stopped(returncode: int, log: str) -> Stopped:
    """What a worker that answered nothing ran into. bubblewrap reports a child ended by
    signal N as 128 + N; anything else nonzero is the worker's or the sandbox's own error."""
    signum = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if signum == signal.SIGXCPU:
        why, by_input = "ran past its CPU-time limit", True
    elif signum == signal.SIGXFSZ:
        why, by_input = "wrote a file past its size limit", True
    elif "MemoryError" in log:
        why, by_input = "ran out of its memory limit", True
    elif signum:
        why, by_input = f"was ended by signal {signal.Signals(signum).name}", True
    else:
        why, by_input = f"exited with {returncode}", False
    return Stopped(f"{why}: {log}" if log else why, by_input)


def _tail(path: Path, limit: int = 1500) -> str:
    size = path.stat().st_size
    with open(path, "rb") as fh:
        fh.seek(max(0, size - limit))
        return fh.read().decode("utf-8", "replace").strip()
