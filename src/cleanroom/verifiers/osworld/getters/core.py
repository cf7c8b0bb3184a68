"""The getter context and OSWorld's general and file getters.

Each getter takes the run's context and the getter's config object, as OSWorld's
``get_<type>(env, config)`` does. Where OSWorld would return None because a command or
download failed to run, these raise (`GetterFailed`, `GuestTimeout`, `GuestError`) so the
evaluator can mark the rollout invalid instead of scoring a 0. A file that does not exist
in the guest is the one exception, as in OSWorld: `FileNotFoundError`, which scores 0.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cleanroom.exec_result import ExecResult
from cleanroom.guests.base import Guest
from cleanroom.verifiers.osworld.cached_file import CachedFile
from cleanroom.verifiers.osworld.commands import BadCommand, decode_output, guest_command
from cleanroom.verifiers.osworld.download import DownloadError
from cleanroom.verifiers.osworld.mirror import fetch_task_file
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task_cache import CacheNameError, TaskCache


class GetterFailed(Exception):
    """A getter could not produce its value (bad config, failed download, missing cache file)."""


class UnreadableResult(FileNotFoundError):
    """A file the agent left that a getter cannot read (no JSON, no zip, not UTF-8) where
    OSWorld's getter crashes: like a missing file, it scores 0."""


@dataclass
class GetterContext:
    """What getters need: the guest, the settings and the task's cache folder.

    ``exec_log`` collects every command a getter ran, so outcome details can show exit
    codes and stderr that the getter's value itself leaves out.
    """

    guest: Guest
    settings: CheckSettings
    cache: TaskCache
    exec_log: list[ExecResult] = field(default_factory=list)


Getter = Callable[[GetterContext, dict[str, Any]], Any]


def run_command(ctx: GetterContext, config: dict[str, Any]) -> ExecResult:
    """Run a getter's ``command`` (with its ``shell``) as OSWorld's server would."""
    shell = config.get("shell", False)
    try:
        command, use_shell = guest_command(config.get("command"), shell, ctx.guest.home)
    except BadCommand as exc:
        raise GetterFailed(str(exc)) from exc
    result = ctx.guest.exec(command, shell=use_shell, timeout=ctx.settings.getter_timeout)
    ctx.exec_log.append(result)
    return result


def read_agent_file(ctx: GetterContext, path: str) -> bytes | None:
    """A guest file's bytes, or None when there is none: missing, no regular file (a link
    is never followed) or over the read cap, as OSWorld's ``get_file`` gives None."""
    try:
        return ctx.guest.read_file(path)
    except FileNotFoundError:  # NotARegularFile too
        return None


def get_vm_command_line(ctx: GetterContext, config: dict[str, Any]) -> str | None:
    """The command's stdout, exactly as produced (exit code ignored, as in OSWorld); None
    when its stdout or stderr is not UTF-8, as OSWorld's server gives."""
    result = run_command(ctx, config)
    return output_or_none(result.stdout, result.stderr)


def get_vm_command_error(ctx: GetterContext, config: dict[str, Any]) -> str | None:
    """The command's stderr, exactly as produced (exit code ignored, as in OSWorld); None
    when its stdout or stderr is not UTF-8, as OSWorld's server gives."""
    result = run_command(ctx, config)
    return output_or_none(result.stderr, result.stdout)


def output_or_none(wanted: bytes, other: bytes) -> str | None:
    """``wanted`` as text; None when it or ``other`` is not UTF-8. OSWorld's server
    decodes both strictly and answers no output at all when either fails, so the metric
    gets None (mostly a 0). Decoding the bytes anyway could score output that OSWorld
    would never score, for bytes the agent's state put there."""
    try:
        wanted.decode("utf-8")
        other.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return decode_output(wanted)


def get_rule(ctx: GetterContext, config: dict[str, Any]) -> Any:
    """The ``rules`` object, unchanged."""
    if "rules" not in config:
        raise GetterFailed("rule getter has no 'rules'")
    return config["rules"]


def _paths_and_dests(config: dict[str, Any]) -> tuple[list[Any], list[Any], list[int]]:
    if config.get("multi", False):
        paths, dests = config.get("path"), config.get("dest")
        if not isinstance(paths, list) or not isinstance(dests, list) or len(paths) != len(dests):
            raise GetterFailed("a multi getter needs 'path' and 'dest' lists of equal length")
    else:
        if "path" not in config or "dest" not in config:
            raise GetterFailed("getter needs 'path' and 'dest'")
        paths, dests = [config["path"]], [config["dest"]]
    return paths, dests, list(config.get("gives", [0]))


def _one_or_list(values: list[Any]) -> Any:
    return values[0] if len(values) == 1 else values


def cache_write(ctx: GetterContext, dest: Any, data: bytes) -> CachedFile:
    """Store a getter's file under ``dest``, in a folder of the cache that already exists.

    OSWorld opens ``cache_dir/dest`` without making folders, so a ``dest`` naming a
    sub-folder nothing made fails there (the metric gets None, or the run crashes):
    a task that cannot be scored, here a getter failure rather than a folder made up.
    """
    try:
        target = ctx.cache.path(str(dest))
        if not os.path.isdir(os.path.dirname(target)):
            raise GetterFailed(f"dest {dest!r} is in a folder the task cache does not have")
        return ctx.cache.write(str(dest), data)
    except CacheNameError as exc:
        raise GetterFailed(str(exc)) from exc


def _time_suffixed(dest: Any, config: dict[str, Any]) -> Any:
    """OSWorld's ``time_suffix`` (single files only): the time inserted before the extension."""
    if config.get("multi", False) or not config.get("time_suffix", False):
        return dest
    stem, ext = os.path.splitext(str(dest))
    return f"{stem}_{datetime.now().strftime(config.get('time_format', '%Y%m%d_%H%M%S'))}{ext}"


def get_vm_file(ctx: GetterContext, config: dict[str, Any]) -> Any:
    """Copy guest files into the cache; a missing single file raises FileNotFoundError.

    With ``multi`` a missing file gives None in its place, as OSWorld does; a missing file
    that ``gives`` leaves out changes nothing.
    """
    paths, dests, gives = _paths_and_dests(config)
    multi = bool(config.get("multi", False))
    values: list[CachedFile | None] = []
    for i, (path, dest) in enumerate(zip(paths, dests, strict=True)):
        try:
            data = ctx.guest.read_file(str(path))
        except FileNotFoundError:
            if i not in gives:
                continue
            if not multi:
                raise
            values.append(None)
            continue
        cached = cache_write(ctx, _time_suffixed(dest, config), data)
        if i in gives:
            values.append(cached)
    return _one_or_list(values)


def get_cache_file(ctx: GetterContext, config: dict[str, Any]) -> CachedFile:
    """A file an earlier postconfig step saved into the task cache."""
    name = config.get("path")
    if not isinstance(name, str):
        raise GetterFailed("cache_file getter needs a 'path'")
    try:
        return ctx.cache.read(name)
    except FileNotFoundError as exc:
        raise GetterFailed(
            f"cache file {name!r} was never written (the step meant to save it did not run)"
        ) from exc
    except CacheNameError as exc:
        raise GetterFailed(str(exc)) from exc


def get_cloud_file(ctx: GetterContext, config: dict[str, Any]) -> Any:
    """Download reference files into the cache, from the mirror when one is set; a failed
    download, or a file the mirror lacks, is a getter failure."""
    paths, dests, gives = _paths_and_dests(config)
    values: list[CachedFile] = []
    for i, (url, dest) in enumerate(zip(paths, dests, strict=True)):
        try:
            if ctx.cache.exists(str(dest)):  # fetched already during this run
                cached = ctx.cache.read(str(dest))
            else:
                s = ctx.settings
                data = fetch_task_file(
                    str(url), s.mirror, timeout=s.download_timeout, cap=s.file_cap_bytes
                )
                cached = cache_write(ctx, dest, data)
        except DownloadError as exc:
            raise GetterFailed(str(exc)) from exc
        except CacheNameError as exc:
            raise GetterFailed(str(exc)) from exc
        if i in gives:
            values.append(cached)
    return _one_or_list(values)
