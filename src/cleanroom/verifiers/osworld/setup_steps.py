"""Running a task's ``config`` and ``postconfig`` steps in a guest.

The semantics follow OSWorld's setup controller: an ``execute`` step's exit code is
recorded but not checked, and a program that cannot be started is recorded and skipped,
as OSWorld logs and goes on. Where OSWorld would hang or carry on blind, cleanroom stops
with a `SetupStepFailed` naming the step: a download that fails, a command that runs past
its limit, an ``until`` condition never met, a guest that stops answering, or a step the
guest cannot perform (desktop steps on a guest with no desktop).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cleanroom.exec_result import ExecResult
from cleanroom.guests.base import CommandNotStarted, Guest, GuestError, GuestTimeout
from cleanroom.lifecycle import wait_until
from cleanroom.verifiers.osworld.commands import (
    BadCommand,
    decode_output,
    guest_command,
    substitute_placeholders,
)
from cleanroom.verifiers.osworld.details import excerpt
from cleanroom.verifiers.osworld.download import DownloadError, fetch
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task import SetupStep
from cleanroom.verifiers.osworld.task_cache import CacheNameError, TaskCache

_UNTIL_POLL_S = 0.3  # OSWorld's polling interval
_DOWNLOAD_TRIES = 3  # OSWorld's host-side retries

# Steps that drive windows, browsers or accounts: they need a desktop session.
DESKTOP_STEPS = frozenset(
    {
        "open",
        "activate_window",
        "close_window",
        "chrome_open_tabs",
        "chrome_close_tabs",
        "update_browse_history",
        "googledrive",
        "login",
        "change_wallpaper",
    }
)


class SetupStepFailed(Exception):
    """A setup or postconfig step could not be performed; the environment is not as needed."""

    def __init__(self, phase: str, index: int, step_type: str, why: str) -> None:
        self.phase = phase
        self.index = index
        self.step_type = step_type
        self.why = why
        self.results: list[dict[str, Any]] = []
        super().__init__(f"{phase} step {index} ({step_type}) failed: {why}")


class _StepError(Exception):
    """Raised inside a step handler; the runner adds the phase and the index."""


@dataclass
class StepContext:
    """What a step needs: the guest, the run's settings and the task's cache folder."""

    guest: Guest
    settings: CheckSettings
    cache: TaskCache

    def placeholders(self) -> dict[str, str]:
        """The values OSWorld substitutes into setup commands."""
        s = self.settings
        return {
            "CLIENT_PASSWORD": s.client_password,
            "SCREEN_WIDTH_HALF": str(s.screen_width // 2),
            "SCREEN_HEIGHT_HALF": str(s.screen_height // 2),
            "SCREEN_WIDTH": str(s.screen_width),
            "SCREEN_HEIGHT": str(s.screen_height),
        }


StepHandler = Callable[[StepContext, dict[str, Any]], dict[str, Any]]


def _exec_record(result: ExecResult) -> dict[str, Any]:
    return {
        "returncode": result.exit_code,
        "stdout": excerpt(decode_output(result.stdout), 1000),
        "stderr": excerpt(decode_output(result.stderr), 1000),
        "duration_s": round(result.seconds, 3),
    }


def _until_met(until: dict[str, Any], result: ExecResult) -> bool:
    return (
        ("returncode" in until and result.exit_code == until["returncode"])
        or ("stdout" in until and until["stdout"] in decode_output(result.stdout))
        or ("stderr" in until and until["stderr"] in decode_output(result.stderr))
    )


def run_execute(ctx: StepContext, params: dict[str, Any]) -> dict[str, Any]:
    """``execute``/``command``: run a command to completion, placeholders filled."""
    raw = substitute_placeholders(params.get("command"), ctx.placeholders())
    try:
        command, shell = guest_command(raw, params.get("shell", False), ctx.guest.home)
    except BadCommand as exc:
        raise _StepError(str(exc)) from exc
    until: dict[str, Any] = params.get("until") or {}
    attempts = 0

    def attempt() -> ExecResult | None:
        nonlocal attempts
        attempts += 1
        result = ctx.guest.exec(command, shell=shell, timeout=ctx.settings.step_timeout)
        return result if not until or _until_met(until, result) else None

    try:
        met = wait_until(attempt, ctx.settings.until_timeout, _UNTIL_POLL_S)
    except CommandNotStarted as exc:
        # OSWorld's server answers 500 here and the controller only logs it.
        return {"started": False, "error": str(exc)}
    except GuestTimeout as exc:
        raise _StepError(str(exc)) from exc
    if met is None:
        raise _StepError(
            f"until condition {until!r} not met after {attempts} tries "
            f"({ctx.settings.until_timeout:g} s)"
        )
    result = met
    record = _exec_record(result)
    if until:
        record["attempts"] = attempts
    for key, data in (("stdout", result.stdout), ("stderr", result.stderr)):
        name = params.get(key)
        if name:
            try:
                saved = ctx.cache.write(name, decode_output(data).encode("utf-8"))
            except CacheNameError as exc:
                raise _StepError(str(exc)) from exc
            record[f"{key}_saved_to"] = saved.path
    return record


def run_launch(ctx: StepContext, params: dict[str, Any]) -> dict[str, Any]:
    """``launch``: start a program and do not wait for it."""
    raw = params.get("command")
    shell = params.get("shell", False)
    if isinstance(raw, str) and not shell:
        raw = raw.split()  # OSWorld's launch splits on whitespace, not shell-style
    try:
        command, use_shell = guest_command(raw, shell, ctx.guest.home)
    except BadCommand as exc:
        raise _StepError(str(exc)) from exc
    try:
        ctx.guest.spawn(command, shell=use_shell)
    except CommandNotStarted as exc:
        return {"started": False, "error": str(exc)}
    return {"started": True}


def run_sleep(ctx: StepContext, params: dict[str, Any]) -> dict[str, Any]:
    """``sleep``: wait ``seconds``."""
    try:
        seconds = float(params["seconds"])
    except (KeyError, TypeError, ValueError) as exc:
        raise _StepError(f"sleep needs a number of 'seconds', got {params!r}") from exc
    time.sleep(max(seconds, 0.0))
    return {"seconds": seconds}


def run_download(ctx: StepContext, params: dict[str, Any]) -> dict[str, Any]:
    """``download``: fetch each URL on the host and write it to its path in the guest."""
    files = params.get("files")
    if not isinstance(files, list) or not files:
        raise _StepError("download needs a non-empty list of 'files'")
    written = []
    for entry in files:
        if not isinstance(entry, dict) or "url" not in entry or "path" not in entry:
            raise _StepError(f"download entry needs 'url' and 'path': {entry!r}")
        try:
            data = fetch(entry["url"], timeout=ctx.settings.download_timeout, tries=_DOWNLOAD_TRIES)
        except DownloadError as exc:
            raise _StepError(str(exc)) from exc
        ctx.guest.write_file(entry["path"], data)
        written.append({"url": entry["url"], "path": entry["path"], "size": len(data)})
    return {"files": written}


STEP_RUNNERS: dict[str, StepHandler] = {
    "execute": run_execute,
    "command": run_execute,
    "launch": run_launch,
    "sleep": run_sleep,
    "download": run_download,
}
"""Step types cleanroom can run on any guest."""


def run_steps(steps: tuple[SetupStep, ...], phase: str, ctx: StepContext) -> list[dict[str, Any]]:
    """Run steps in order and return one record per step.

    Raises `SetupStepFailed` (carrying the records so far) at the first step that cannot
    be performed.
    """
    records: list[dict[str, Any]] = []
    for index, step in enumerate(steps):
        started = time.monotonic()
        try:
            outcome = _run_one(step, ctx)
        except (_StepError, GuestError, OSError) as exc:
            failed = SetupStepFailed(phase, index, step.type, str(exc))
            records.append({"index": index, "type": step.type, "ok": False, "error": str(exc)})
            failed.results = records
            raise failed from exc
        records.append(
            {
                "index": index,
                "type": step.type,
                "ok": True,
                **outcome,
                "step_s": round(time.monotonic() - started, 3),
            }
        )
    return records


def _run_one(step: SetupStep, ctx: StepContext) -> dict[str, Any]:
    runner = STEP_RUNNERS.get(step.type)
    if runner is not None:
        return runner(ctx, step.parameters)
    if step.type in DESKTOP_STEPS:
        raise _StepError(f"needs a desktop session, which guest {ctx.guest.kind!r} does not have")
    raise _StepError("this step type is not supported yet")
