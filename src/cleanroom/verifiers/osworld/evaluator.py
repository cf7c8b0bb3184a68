"""Scoring an OSWorld task in a guest, in the order of OSWorld's ``DesktopEnv.evaluate()``.

This is the one place that turns a task run into an `Outcome`:

1. postconfig steps run first, for every task (infeasible ones too);
2. an ``infeasible`` task scores 1 if and only if the last action is FAIL;
3. any other task whose last action is FAIL scores 0;
4. a single metric is called as ``metric(result, expected, **options)``, or
   ``metric(result, **options)`` when there is no expected getter;
5. a list of metrics combines with ``conj``: ``and`` stops at the first 0 and otherwise
   averages, ``or`` stops at the first 1 and otherwise takes the maximum.

The deliberate difference from OSWorld: a getter that failed to run (timeout, guest
failure, failed download, any exception) or a metric that raised makes the rollout
``invalid`` (``checker_error``) rather than a 0, so an infrastructure fault is never
blamed on the agent. A result file missing from the guest still scores 0, as in OSWorld,
and so does what the agent left in its place that is no file to read (a folder, a FIFO,
a device, a file over the read cap) or no text where a metric reads text: the agent's
output is never a reason to be invalid.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any

from cleanroom.core.outcomes import Cause, Outcome, Reason
from cleanroom.guests.base import (
    CommandNotStarted,
    Guest,
    GuestError,
    GuestTimeout,
)
from cleanroom.host_files import NotARegularFile
from cleanroom.verifiers.osworld.cached_file import CachedFile, NotText
from cleanroom.verifiers.osworld.checker_env import (
    CheckerEnvironmentMissing,
    Raised,
    Returned,
    Stopped,
    run_metric,
)
from cleanroom.verifiers.osworld.details import excerpt, shape_value
from cleanroom.verifiers.osworld.getters import GETTERS, GetterContext, GetterFailed
from cleanroom.verifiers.osworld.metrics import METRICS
from cleanroom.verifiers.osworld.own_metrics import OWN_METRICS, TRUSTED_GETTERS, blame_of, describe
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.setup_steps import SetupStepFailed, StepContext, run_steps
from cleanroom.verifiers.osworld.support import missing_for_check
from cleanroom.verifiers.osworld.task import GetterSpec, MetricCall, Task, task_in_home
from cleanroom.verifiers.osworld.task_cache import TaskCache

FAIL = "FAIL"


def is_fail_action(action: Any) -> bool:
    """Whether an action is OSWorld's FAIL: ``"FAIL"`` or ``{"action_type": "FAIL"}``.

    A string holding a JSON object is read as that object, so a command line can pass
    either form.
    """
    if isinstance(action, str) and action.lstrip().startswith("{"):
        try:
            action = json.loads(action)
        except json.JSONDecodeError:
            return False
    if isinstance(action, dict):
        return action.get("action_type") == FAIL
    return action == FAIL


class _CheckerError(Exception):
    """A getter or metric could not run; becomes an invalid outcome with this message."""


class _MissingResultFile(Exception):
    """The result getter's file is not in the guest; OSWorld scores that as 0."""


@dataclass
class _Scored:
    score: float
    stopped_early: bool


class TaskRun:
    """One run of one task in one guest: setup, then the checker, sharing one cache.

    The cache folder is cleared when the run starts, so nothing a previous run left
    there can be scored (OSWorld keeps it; see `TaskCache`).
    """

    def __init__(self, task: Task, guest: Guest, settings: CheckSettings | None = None) -> None:
        # The task's paths name OSWorld's home; the guest's user has its own.
        self.task = task_in_home(task, guest.home)
        self.guest = guest
        self.settings = settings or CheckSettings()
        self.cache = TaskCache(self.settings.cache_root, task.id)
        self.cache.reset()
        self.details: dict[str, Any] = {"task": task.id, "guest": guest.describe()}
        if self.cache.kept:
            self.details["cache_dir"] = self.cache.dir

    def close(self) -> None:
        """Remove the run's temporary cache folder."""
        self.cache.discard()

    def __enter__(self) -> TaskRun:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _steps(self, phase: str) -> Outcome | None:
        steps = self.task.config if phase == "config" else self.task.evaluator.postconfig
        ctx = StepContext(self.guest, self.settings, self.cache)
        try:
            self.details[phase] = run_steps(steps, phase, ctx)
        except SetupStepFailed as exc:
            self.details[phase] = exc.results
            return Outcome.invalid(Reason.ENVIRONMENT_ERROR, str(exc), **self.details)
        return None

    def setup(self) -> Outcome | None:
        """Run the task's ``config`` steps; an invalid outcome if one fails, else None."""
        return self._steps("config")

    def refusal(self) -> Outcome | None:
        """An invalid outcome when the task needs a getter or metric cleanroom lacks."""
        missing = missing_for_check(self.task)
        if not missing:
            return None
        return Outcome.invalid(
            Reason.CHECKER_ERROR,
            f"task {self.task.id} needs what cleanroom does not support yet: " + ", ".join(missing),
            unsupported=missing,
            **self.details,
        )

    def check(self, last_action: Any = None) -> Outcome:
        """Run postconfig, the getters and the metrics, and decide the outcome."""
        refused = self.refusal()
        if refused is not None:
            return refused
        failed = self._steps("postconfig")
        if failed is not None:
            return failed
        evaluator = self.task.evaluator
        if evaluator.infeasible:
            score = 1.0 if is_fail_action(last_action) else 0.0
            return Outcome.from_score(score, scored_by="infeasible", **self.details)
        if is_fail_action(last_action):
            return Outcome.from_score(0.0, scored_by="last action FAIL", **self.details)
        getters: list[dict[str, Any]] = []
        metrics: list[dict[str, Any]] = []
        self.details.update(getters=getters, metrics=metrics)
        if evaluator.is_list:
            self.details["conj"] = evaluator.conj
        try:
            scored = self._score(getters, metrics)
        except _CheckerError as exc:
            return Outcome.invalid(Reason.CHECKER_ERROR, str(exc), **self.details)
        if not math.isfinite(scored.score) or not 0.0 <= scored.score <= 1.0:
            return Outcome.invalid(
                Reason.BAD_REWARD,
                f"the metrics gave {scored.score!r}, not a number in [0, 1]",
                **self.details,
            )
        if scored.stopped_early:
            self.details["stopped_early"] = True
        return Outcome.from_score(scored.score, **self.details)

    def _score(self, getters: list[dict[str, Any]], metrics: list[dict[str, Any]]) -> _Scored:
        evaluator = self.task.evaluator
        ctx = GetterContext(self.guest, self.settings, self.cache)
        if not evaluator.is_list:
            try:
                return _Scored(self._call(0, evaluator.calls[0], ctx, getters, metrics), False)
            except _MissingResultFile:
                return _Scored(0.0, False)
        scores: list[float] = []
        for index, call in enumerate(evaluator.calls):
            try:
                score = self._call(index, call, ctx, getters, metrics)
            except _MissingResultFile:
                if evaluator.conj == "and":
                    return _Scored(0.0, index < len(evaluator.calls) - 1)
                # OSWorld reuses a stale value here (or crashes); a missing file is a 0.
                score = 0.0
            if evaluator.conj == "and" and score == 0.0:
                return _Scored(0.0, index < len(evaluator.calls) - 1)
            if evaluator.conj == "or" and score == 1.0:
                return _Scored(1.0, index < len(evaluator.calls) - 1)
            scores.append(score)
        if evaluator.conj == "and":
            return _Scored(sum(scores) / len(scores), False)
        return _Scored(max(scores), False)

    def _call(
        self,
        index: int,
        call: MetricCall,
        ctx: GetterContext,
        getters: list[dict[str, Any]],
        metrics: list[dict[str, Any]],
    ) -> float:
        result = self._get(index, "result", call.result, ctx, getters)
        args: list[Any] = [result]
        if call.expected is not None:
            args.append(self._get(index, "expected", call.expected, ctx, getters))
        if call.func in OWN_METRICS:
            return self._call_own(index, call, args, metrics)
        metric = METRICS[call.func]
        try:
            raw = metric(*args, **call.options)
        except NotText as exc:
            if not _holds(result, exc.file):
                metrics.append({"call": index, "func": call.func, "error": _why(exc)})
                raise _CheckerError(
                    f"metric {call.func} (call {index}) raised {_why(exc)}"
                ) from exc
            # The agent's file where the task wants text is the agent's 0, as a missing one is.
            metrics.append({"call": index, "func": call.func, "score": 0.0, "result": str(exc)})
            return 0.0
        except Exception as exc:
            metrics.append({"call": index, "func": call.func, "error": _why(exc)})
            raise _CheckerError(f"metric {call.func} (call {index}) raised {_why(exc)}") from exc
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            metrics.append({"call": index, "func": call.func, "error": f"returned {raw!r}"})
            raise _CheckerError(f"metric {call.func} (call {index}) returned {raw!r}, not a number")
        metrics.append({"call": index, "func": call.func, "score": float(raw)})
        return float(raw)

    def _call_own(
        self, index: int, call: MetricCall, args: list[Any], metrics: list[dict[str, Any]]
    ) -> float:
        """One of OSWorld's own metrics, run from desktop-env in the checker environment.

        Where it raises or hits a limit on what the agent left, the agent scores 0 with
        the reason; it is the infrastructure's fault (invalid) only where a library is
        missing, the sandbox failed, or the expected state alone fails the same way.
        """
        record: dict[str, Any] = {"call": index, "func": call.func, "checker": "desktop-env"}
        metrics.append(record)
        trusted = call.expected is not None and call.expected.type in TRUSTED_GETTERS
        check = [args[1], args[1]] if trusted else None
        metric = OWN_METRICS[call.func]
        try:
            answer = run_metric(
                metric, args, call.options, cache_dir=self.cache.dir, self_check=check
            )
            if isinstance(answer, Stopped) and answer.by_input and check is not None:
                again = run_metric(metric, check, call.options, cache_dir=self.cache.dir)
                answer = Raised("Stopped", answer.why, False, again)
        except CheckerEnvironmentMissing as exc:
            record["error"] = str(exc)
            raise _CheckerError(f"metric {call.func} (call {index}): {exc}") from exc
        blame = blame_of(answer, self_checked=check is not None)
        if isinstance(answer, Returned):
            record["score"] = answer.value
            return answer.value
        why = describe(answer)
        if blame is Cause.AGENT:
            record.update(score=0.0, result=f"the metric could not read the result: {why}")
            return 0.0
        record["error"] = why
        raise _CheckerError(f"metric {call.func} (call {index}) {why}")

    def _get(
        self,
        index: int,
        role: str,
        spec: GetterSpec,
        ctx: GetterContext,
        getters: list[dict[str, Any]],
    ) -> Any:
        record: dict[str, Any] = {"call": index, "role": role, "type": spec.type}
        getters.append(record)
        ctx.exec_log.clear()
        started = time.monotonic()
        label = f"{role} getter {spec.type} (call {index})"
        try:
            value = GETTERS[spec.type](ctx, spec.config)
        except FileNotFoundError as exc:
            record["missing_file"] = exc.filename or str(exc)
            if isinstance(exc, NotARegularFile):
                record["not_a_regular_file"] = exc.strerror
            if role == "result":
                raise _MissingResultFile from exc
            raise _CheckerError(f"{label}: file not found: {exc.filename or exc}") from exc
        except GuestTimeout as exc:
            record["error"] = f"timed out after {exc.timeout:g} s"
            raise _CheckerError(f"{label} ran past its {exc.timeout:g} s limit") from exc
        except CommandNotStarted as exc:
            record["error"] = str(exc)
            raise _CheckerError(f"{label} could not start its command: {exc.why}") from exc
        except (GuestError, GetterFailed) as exc:
            record["error"] = str(exc)
            raise _CheckerError(f"{label} failed: {exc}") from exc
        except Exception as exc:
            record["error"] = _why(exc)
            raise _CheckerError(f"{label} raised {_why(exc)}") from exc
        finally:
            record["duration_s"] = round(time.monotonic() - started, 3)
            if ctx.exec_log:
                last = ctx.exec_log[-1]
                record["returncode"] = last.exit_code
                if last.stderr and spec.type != "vm_command_error":
                    record["stderr"] = excerpt(last.stderr.decode("utf-8", "replace"), 1000)
        record["value"] = shape_value(value)
        return value


def _holds(value: Any, file: CachedFile) -> bool:
    """Whether a getter's value is ``file`` or a list holding it."""
    return value is file or (isinstance(value, list) and any(v is file for v in value))


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def check_task(
    task: Task,
    guest: Guest,
    settings: CheckSettings | None = None,
    *,
    last_action: Any = None,
    run_setup: bool = False,
) -> Outcome:
    """Check a task in a guest: optionally its ``config`` first, then the checker."""
    with TaskRun(task, guest, settings) as run:
        refused = run.refusal()
        if refused is not None:
            return refused
        if run_setup:
            failed = run.setup()
            if failed is not None:
                return failed
        return run.check(last_action)
