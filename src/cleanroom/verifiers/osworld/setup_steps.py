"""Running a task's ``config`` and ``postconfig`` steps in a guest.

The semantics follow OSWorld's setup controller: an ``execute`` step's exit code is
recorded but not checked, a program that cannot be started is recorded and skipped, and
an ``activate_window`` or ``close_window`` that finds no window is recorded, as OSWorld
logs and goes on. Where OSWorld would hang or carry on blind, cleanroom stops with a
`SetupStepFailed` naming the step: a download that fails, a command that runs past its
limit, an ``until`` condition never met, a file to ``open`` that is missing or whose
window never shows, a guest that stops answering, or a step the guest cannot perform
(desktop steps on a guest with no desktop).
"""

from __future__ import annotations

import json
import os
import posixpath
import sqlite3
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cleanroom.exec_result import ExecResult
from cleanroom.guests.base import CommandNotStarted, Guest, GuestError, GuestTimeout
from cleanroom.lifecycle import wait_until
from cleanroom.verifiers.osworld import devtools, guest_program
from cleanroom.verifiers.osworld.commands import (
    BadCommand,
    decode_output,
    guest_command,
    substitute_placeholders,
)
from cleanroom.verifiers.osworld.details import excerpt
from cleanroom.verifiers.osworld.download import DownloadError
from cleanroom.verifiers.osworld.mirror import EMPTY_HISTORY_URL, fetch_task_file
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task import SetupStep
from cleanroom.verifiers.osworld.task_cache import CacheNameError, TaskCache

_UNTIL_POLL_S = 0.3  # OSWorld's polling interval
_DOWNLOAD_TRIES = 3  # OSWorld's host-side retries
# The desktop steps' helper, run in the guest by the system Python (which has python3-xlib);
# ``-I`` keeps the user's home and environment off its import path.
WINDOWS_HELPER = Path(__file__).with_name("guest_windows.py")
_HELPER_GRACE_S = 15.0  # beyond the helper's own wait, for its start and its answer

# Steps that drive windows, browsers or accounts: they need a desktop session.
DESKTOP_STEPS = frozenset(
    {
        "open",
        "activate_window",
        "close_window",
        "chrome_open_tabs",
        "chrome_close_tabs",
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
    """``download``: fetch each URL on the host (from the mirror when one is set) and
    write it to its path in the guest."""
    files = params.get("files")
    if not isinstance(files, list) or not files:
        raise _StepError("download needs a non-empty list of 'files'")
    written = []
    for entry in files:
        if not isinstance(entry, dict) or "url" not in entry or "path" not in entry:
            raise _StepError(f"download entry needs 'url' and 'path': {entry!r}")
        try:
            data = fetch_task_file(
                str(entry["url"]),
                ctx.settings.mirror,
                timeout=ctx.settings.download_timeout,
                cap=ctx.settings.file_cap_bytes,
                tries=_DOWNLOAD_TRIES,
            )
        except DownloadError as exc:
            raise _StepError(str(exc)) from exc
        ctx.guest.write_file(entry["path"], data)
        written.append({"url": entry["url"], "path": entry["path"], "size": len(data)})
    return {"files": written}


CHROME_HISTORY = "~/.config/google-chrome/Default/History"
_CHROME_EPOCH = datetime(1601, 1, 1)


def chrome_time(moment: datetime) -> int:
    """Chrome's timestamp of a (naive, local) time: microseconds since 1601-01-01."""
    return int((moment - _CHROME_EPOCH).total_seconds() * 1000000)


def history_database(empty: bytes, history: list[dict[str, Any]], now: datetime) -> bytes:
    """``empty`` (Chrome's History database) with one visited URL per entry of
    ``history``, as OSWorld's controller writes them (typed 0, transition 805306368)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "History")
        with open(path, "wb") as out:
            out.write(empty)
        connection = sqlite3.connect(path)
        try:
            for item in history:
                when = chrome_time(now - timedelta(seconds=item["visit_time_from_now_in_seconds"]))
                cursor = connection.execute(
                    "INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time,"
                    " hidden) VALUES (?, ?, ?, ?, ?, ?)",
                    (item["url"], item["title"], 1, 0, when, 0),
                )
                connection.execute(
                    "INSERT INTO visits (url, visit_time, from_visit, transition, segment_id,"
                    " visit_duration) VALUES (?, ?, ?, ?, ?, ?)",
                    (cursor.lastrowid, when, 0, 805306368, 0, 0),
                )
            connection.commit()
        finally:
            connection.close()
        with open(path, "rb") as done:
            return done.read()


def run_update_browse_history(ctx: StepContext, params: dict[str, Any]) -> dict[str, Any]:
    """``update_browse_history``: replace Chrome's History with OSWorld's empty database
    holding the given visits (``url``, ``title``, ``visit_time_from_now_in_seconds``).

    The empty database is a file of OSWorld's dataset, fetched like a ``download`` step's
    (from the mirror when one is set). The database is filled on the host and written to
    the guest as its user, so OSWorld's ``chown`` afterwards has nothing to do.
    """
    history = params.get("history")
    if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
        raise _StepError(f"update_browse_history needs a list of 'history' entries: {history!r}")
    s = ctx.settings
    try:
        empty = fetch_task_file(
            EMPTY_HISTORY_URL,
            s.mirror,
            timeout=s.download_timeout,
            cap=s.file_cap_bytes,
            tries=_DOWNLOAD_TRIES,
        )
    except DownloadError as exc:
        raise _StepError(str(exc)) from exc
    try:
        data = history_database(empty, history, datetime.now())
    except (sqlite3.Error, KeyError, TypeError) as exc:
        raise _StepError(f"cannot fill Chrome's History: {exc}") from exc
    ctx.guest.write_file(CHROME_HISTORY, data)
    return {"path": CHROME_HISTORY, "visits": len(history), "size": len(data)}


STEP_RUNNERS: dict[str, StepHandler] = {
    "execute": run_execute,
    "command": run_execute,
    "launch": run_launch,
    "sleep": run_sleep,
    "download": run_download,
    "update_browse_history": run_update_browse_history,
}
"""Step types cleanroom can run on any guest."""


def _windows_helper(
    ctx: StepContext, op: str, args: dict[str, Any], limit: float | None = None
) -> dict[str, Any]:
    """Run one operation of the window helper in the guest and return its answer; the
    run is limited to ``limit`` seconds, by default the step limit.

    The helper's source goes in as ``-c`` and the task's strings as one JSON argv element,
    so no shell ever reads them.
    """
    return guest_program.run_json(
        ctx.guest,
        WINDOWS_HELPER.read_text(),
        [op, json.dumps(args)],
        limit=ctx.settings.step_timeout if limit is None else limit,
        what=f"the window helper ({op})",
        fails_as=_StepError,
    )


def _window_query(params: dict[str, Any], step: str) -> dict[str, Any]:
    name = params.get("window_name")
    if not isinstance(name, str) or not name:
        # OSWorld's controller raises on an empty name before asking the server.
        raise _StepError(f"{step} needs a non-empty 'window_name', got {name!r}")
    return {
        "name": name,
        "strict": bool(params.get("strict", False)),
        "by_class": bool(params.get("by_class", False)),
    }


def _window_outcome(answer: dict[str, Any]) -> dict[str, Any]:
    if answer.get("window") is None:
        # OSWorld's server answers 200 whatever wmctrl found; its controller goes on.
        return {**answer, "matched": False}
    return {**answer, "matched": True}


def run_activate_window(ctx: StepContext, params: dict[str, Any]) -> dict[str, Any]:
    """``activate_window``: bring the first window whose title contains ``window_name``
    (ignoring case; equal to it with ``strict``; its ``WM_CLASS`` with ``by_class``) to
    the front with the input focus.

    OSWorld's server runs ``wmctrl -a`` (``-xa``, ``-Fa``, ``-xFa``) and its controller
    (``SetupController._activate_window_setup``) only logs a failure, so no window is
    recorded here as ``matched: false`` and the setup goes on. See `guest_windows` for
    what activating means on a display without a window manager.
    """
    return _window_outcome(
        _windows_helper(ctx, "activate", _window_query(params, "activate_window"))
    )


def run_close_window(ctx: StepContext, params: dict[str, Any]) -> dict[str, Any]:
    """``close_window``: ask the first window matched as by ``activate_window`` to close.

    OSWorld's server runs ``wmctrl -c`` (with ``x`` and ``F`` likewise), which asks
    politely and does not wait for the window to go; its controller
    (``SetupController._close_window_setup``) only logs a failure, so no window is
    recorded as ``matched: false`` and the setup goes on.
    """
    return _window_outcome(_windows_helper(ctx, "close", _window_query(params, "close_window")))


def _title_candidates(path: str) -> list[str]:
    name = posixpath.basename(path)
    return [t for t in dict.fromkeys((name, posixpath.splitext(name)[0])) if t]


def run_open(ctx: StepContext, params: dict[str, Any]) -> dict[str, Any]:
    """``open``: open a file with ``xdg-open`` and wait until its window shows, then
    activate that window.

    As OSWorld's server (``/setup/open_file``) does it: ``path`` is expanded in the guest
    (``~``, ``$VARS``); an existing file is handed to ``xdg-open``, otherwise a program
    of that name on PATH is started, otherwise the step fails. The window is the first
    whose title contains the file's name or its name without the extension, looked for
    once a second. OSWorld waits up to 1800 s and fails the setup when no window shows;
    here the wait is bounded by ``CheckSettings.step_timeout``. Titles are matched on
    their own, not on ``wmctrl -l``'s whole line (which also holds the window id, the
    desktop and the host name).
    """
    path = params.get("path")
    if not isinstance(path, str) or not path:
        raise _StepError(f"open needs a non-empty 'path', got {path!r}")
    target = _windows_helper(ctx, "resolve", {"path": path})
    if target.get("kind") == "file":
        where = str(target["path"])
        command, titles = ["xdg-open", where], _title_candidates(where)
    elif target.get("kind") == "program":
        command, titles = [path], [path]
    else:
        raise _StepError(f"no file or program {path!r} in the guest")
    try:
        ctx.guest.spawn(command, shell=False)
    except CommandNotStarted as exc:
        raise _StepError(str(exc)) from exc
    wait_s = ctx.settings.step_timeout
    found = _windows_helper(
        ctx, "wait", {"titles": titles, "timeout": wait_s}, limit=wait_s + _HELPER_GRACE_S
    )
    if found.get("window") is None:
        raise _StepError(
            f"no window with {' or '.join(map(repr, titles))} in its title showed within "
            f"{wait_s:g} s of opening {path!r} (windows: {found.get('seen')!r})"
        )
    return {"path": target["path"], "opened_with": command[0], **found}


def _chrome(ctx: StepContext, op: str, args: dict[str, Any], *waits: float) -> dict[str, Any]:
    try:
        answer = devtools.run_helper(ctx.guest, op, args, devtools.helper_limit(*waits))
    except devtools.DevToolsFailed as exc:
        raise _StepError(str(exc)) from exc
    if not answer.get("connected"):
        # OSWorld's controller raises once its last try to connect fails.
        raise _StepError(f"no Chrome DevTools endpoint: {answer.get('why')}")
    return answer


def _urls(params: dict[str, Any], key: str) -> list[str]:
    urls = params.get(key)
    if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
        raise _StepError(f"needs a list of URLs as {key!r}, got {urls!r}")
    return urls


def run_chrome_open_tabs(ctx: StepContext, params: dict[str, Any]) -> dict[str, Any]:
    """``chrome_open_tabs``: open each of ``urls_to_open`` in a new tab of the running
    Chrome, and close the tab Chrome started with once the first is open.

    As OSWorld's controller (``_chrome_open_tabs_setup``) does it over the DevTools port
    (see `devtools`): it waits up to 70 s for Chrome to answer and fails the setup when it
    never does; a page that does not load within 60 s is recorded (``loaded: false``) and
    the step goes on.
    """
    urls = _urls(params, "urls_to_open")
    args = {"urls": urls, "connect_s": devtools.CONNECT_S, "load_s": devtools.LOAD_S}
    waits = [devtools.CONNECT_S] + [devtools.LOAD_S + 10.0] * len(urls)
    return {"tabs": _chrome(ctx, "open", args, *waits)["opened"]}


def run_chrome_close_tabs(ctx: StepContext, params: dict[str, Any]) -> dict[str, Any]:
    """``chrome_close_tabs``: for each of ``urls_to_close``, close the first tab whose
    address is the same URL (`devtools.same_url`, OSWorld's ``compare_urls``).

    OSWorld's controller (``_chrome_close_tabs_setup``) first waits 5 s for Chrome to
    finish launching, as here; a URL no tab shows closes nothing.
    """
    urls = _urls(params, "urls_to_close")
    time.sleep(5.0)
    listing = {
        "connect_s": devtools.CONNECT_S,
        "load_s": 0.0,
        "total_s": 30.0,
        "max_bytes": devtools.LISTING_CAP_BYTES,
    }
    tabs = _chrome(ctx, "tabs", listing, devtools.CONNECT_S, 30.0, devtools.TAB_PAST_S)["tabs"]
    closing: list[dict[str, Any]] = []
    for url in urls:
        match = next((t for t in tabs if devtools.same_url(t.get("url"), url)), None)
        if match is not None:
            tabs.remove(match)
            closing.append({"url": url, "tab": match.get("url"), "id": match.get("id")})
    if closing:
        ids = [c["id"] for c in closing]
        _chrome(ctx, "close", {"ids": ids, "connect_s": devtools.CONNECT_S}, devtools.CONNECT_S)
    return {
        "closed": closing,
        "unmatched": [u for u in urls if u not in {c["url"] for c in closing}],
    }


DESKTOP_STEP_RUNNERS: dict[str, StepHandler] = {
    "open": run_open,
    "activate_window": run_activate_window,
    "close_window": run_close_window,
    "chrome_open_tabs": run_chrome_open_tabs,
    "chrome_close_tabs": run_chrome_close_tabs,
}
"""Step types cleanroom can run on a guest with a desktop (``Guest.has_desktop``)."""


def step_runners(guest: Guest) -> dict[str, StepHandler]:
    """The step types ``guest`` can run, and how."""
    return {**STEP_RUNNERS, **DESKTOP_STEP_RUNNERS} if guest.has_desktop else STEP_RUNNERS


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
    runner = step_runners(ctx.guest).get(step.type)
    if runner is not None:
        return runner(ctx, step.parameters)
    if step.type in DESKTOP_STEPS and not ctx.guest.has_desktop:
        raise _StepError(f"needs a desktop session, which guest {ctx.guest.kind!r} does not have")
    raise _StepError("this step type is not supported yet")
