"""The values of a compose service's keys, each read with Compose's meaning or refused
with a `ComposeError` naming it: images and builds, healthchecks, ``depends_on``, the
environment and labels, argument lists, durations, ``${VAR}`` interpolation, and the
order the services start in."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cleanroom.verifiers.container.task.compose_model import (
    Build,
    ComposeError,
    Healthcheck,
    Service,
)

_BUILD_KEYS = frozenset({"context", "dockerfile", "args"})
_HEALTH_KEYS = frozenset(
    {"test", "interval", "timeout", "retries", "start_period", "start_interval", "disable"}
)
_CONDITIONS = ("service_started", "service_healthy")
_RESTART = re.compile(r"\A(no|always|unless-stopped|on-failure(:\d+)?)\Z")
# ``$$``, ``${NAME}``, ``${NAME:-default}``, ``${NAME-default}``, ``$NAME``; any other
# ``${...}`` form (``:?``, ``:+``) is refused rather than misread.
_VARIABLE = re.compile(
    r"\$(?:(?P<dollar>\$)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<sep>:?-)(?P<default>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*)|(?P<other>\{[^}]*\}?))"
)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)")
_DURATION_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def service(
    path: Path, name: str, spec: dict[str, Any], names: frozenset[str], env: Mapping[str, str]
) -> Service:
    where = f"services.{name}"
    image = _text(path, spec.get("image"), f"{where}.image")
    build = _build(path, spec.get("build"), f"{where}.build", env)
    if image is None and build is None:
        raise ComposeError(path, f"{where}: needs an image or a build")
    health, disabled = _healthcheck(path, spec.get("healthcheck"), f"{where}.healthcheck")
    restart = str(spec.get("restart", "no"))
    if not _RESTART.match(restart):
        raise ComposeError(path, f"{where}.restart: {restart!r} is not a restart policy")
    init = spec.get("init", False)
    if not isinstance(init, bool):
        raise ComposeError(path, f"{where}.init: must be true or false")
    tmpfs = spec.get("tmpfs", [])
    tmpfs_list = [tmpfs] if isinstance(tmpfs, str) else tmpfs
    if not isinstance(tmpfs_list, list) or not all(isinstance(t, str) for t in tmpfs_list):
        raise ComposeError(path, f"{where}.tmpfs: must be a path or a list of paths")
    return Service(
        name=name,
        image=image,
        build=build,
        command=_argv(path, spec.get("command"), f"{where}.command"),
        entrypoint=_argv(path, spec.get("entrypoint"), f"{where}.entrypoint"),
        environment=environment(path, spec.get("environment"), where, env),
        user=_text(path, spec.get("user"), f"{where}.user", numbers=True),
        working_dir=_text(path, spec.get("working_dir"), f"{where}.working_dir"),
        depends_on=depends_on(path, spec.get("depends_on"), where, names),
        healthcheck=health,
        healthcheck_disabled=disabled,
        restart=restart,
        init=init,
        tmpfs=tuple(tmpfs_list),
        hostname=_text(path, spec.get("hostname"), f"{where}.hostname"),
        container_name=_text(path, spec.get("container_name"), f"{where}.container_name"),
        labels=_pairs(path, spec.get("labels"), f"{where}.labels", env, from_host=False),
    )


def _build(path: Path, value: Any, where: str, env: Mapping[str, str]) -> Build | None:
    if value is None:
        return None
    spec = {"context": value} if isinstance(value, str) else mapping(path, value, where)
    only(path, spec, _BUILD_KEYS, where, "this build option")
    context = _text(path, spec.get("context", "."), f"{where}.context")
    assert context is not None
    if re.match(r"\A[a-z][a-z0-9+.-]*://", context) or context.startswith("git@"):
        raise refused(path, f"{where}.context", "remote build contexts")
    folder = (path.parent / context).resolve()
    environment_dir = path.parent.resolve()
    if folder != environment_dir and environment_dir not in folder.parents:
        raise ComposeError(path, f"{where}.context: {context!r} is outside environment/")
    if not folder.is_dir():
        raise ComposeError(path, f"{where}.context: {context!r} is not a folder")
    dockerfile = _text(path, spec.get("dockerfile", "Dockerfile"), f"{where}.dockerfile")
    assert dockerfile is not None
    if not (folder / dockerfile).is_file():
        raise ComposeError(path, f"{where}.dockerfile: {context}/{dockerfile} is missing")
    args = _pairs(path, spec.get("args"), f"{where}.args", env, from_host=True)
    return Build(folder, dockerfile, args)


def _healthcheck(path: Path, value: Any, where: str) -> tuple[Healthcheck | None, bool]:
    if value is None:
        return None, False
    spec = mapping(path, value, where)
    only(path, spec, _HEALTH_KEYS, where, "this healthcheck option")
    if spec.get("disable") is True:
        return None, True
    test = spec.get("test")
    argv: tuple[str, ...] | None = None
    if isinstance(test, str):
        argv = ("CMD-SHELL", test)
    elif isinstance(test, list) and test and all(isinstance(t, str) for t in test):
        if test[0] == "NONE":
            return None, True
        if test[0] not in ("CMD", "CMD-SHELL") or len(test) < 2:
            raise ComposeError(path, f"{where}.test: must start with CMD, CMD-SHELL or NONE")
        argv = tuple(test)
    elif test is not None:
        raise ComposeError(path, f"{where}.test: must be a command text or a list")
    retries = spec.get("retries")
    if retries is not None and (not isinstance(retries, int) or retries < 1):
        raise ComposeError(path, f"{where}.retries: must be a whole number of 1 or more")
    # start_interval is read and not passed on: daemons older than API 1.44 ignore it,
    # and the checks during the start period then run at ``interval``.
    _duration(path, spec.get("start_interval"), f"{where}.start_interval")
    return (
        Healthcheck(
            argv,
            _duration(path, spec.get("interval"), f"{where}.interval"),
            _duration(path, spec.get("timeout"), f"{where}.timeout"),
            retries,
            _duration(path, spec.get("start_period"), f"{where}.start_period"),
        ),
        False,
    )


def depends_on(
    path: Path, value: Any, where: str, names: frozenset[str]
) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    where = f"{where}.depends_on"
    found: list[tuple[str, str]] = []
    if isinstance(value, list):
        found = [(str(v), "service_started") for v in value]
    else:
        for dep, spec in mapping(path, value, where).items():
            options = mapping(path, spec if spec is not None else {}, f"{where}.{dep}")
            only(
                path,
                options,
                frozenset({"condition", "required", "restart"}),
                f"{where}.{dep}",
                "this depends_on option",
            )
            condition = options.get("condition", "service_started")
            if condition not in _CONDITIONS:
                raise refused(path, f"{where}.{dep}.condition", f"condition {condition!r}")
            if options.get("required", True) is not True:
                raise refused(path, f"{where}.{dep}.required", "optional dependencies")
            found.append((str(dep), str(condition)))
    for dep, _ in found:
        if dep not in names:
            raise ComposeError(path, f"{where}: names {dep!r}, which is not a service")
    return tuple(found)


def environment(
    path: Path, value: Any, where: str, env: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    return _pairs(path, value, f"{where}.environment", env, from_host=True)


def _pairs(
    path: Path, value: Any, where: str, env: Mapping[str, str], *, from_host: bool
) -> tuple[tuple[str, str], ...]:
    """A Compose mapping given as a table or as a list of ``KEY=VALUE``. A key with no
    value takes the host's (``from_host``: ``environment`` and build ``args``, left out
    when the host has none, as in Compose), or is empty (``labels``)."""
    if value is None:
        return ()
    out: dict[str, str] = {}
    if isinstance(value, list):
        for item in value:
            if not isinstance(item, str):
                raise ComposeError(path, f"{where}: {item!r} is not KEY=VALUE")
            key, sep, text = item.partition("=")
            if sep:
                out[key] = text
            elif not from_host:
                out[key] = ""
            elif key in env:
                out[key] = env[key]
        return tuple(out.items())
    for key, item in mapping(path, value, where).items():
        if item is None:
            if not from_host:
                out[str(key)] = ""
            elif str(key) in env:
                out[str(key)] = env[str(key)]
            continue
        if isinstance(item, dict | list):
            raise ComposeError(path, f"{where}.{key}: must be a single value")
        out[str(key)] = _scalar_text(item)
    return tuple(out.items())


def _argv(path: Path, value: Any, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))  # Compose splits a text command, no shell
        except ValueError as exc:
            raise ComposeError(path, f"{where}: {exc}") from exc
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return tuple(_scalar_text(v) for v in value)
    raise ComposeError(path, f"{where}: must be a command text or a list")


def start_order(path: Path, services: dict[str, Service]) -> tuple[Service, ...]:
    """Dependencies first; a cycle is refused."""
    ordered: list[Service] = []
    state: dict[str, str] = {}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            cycle = " -> ".join((*chain, name))
            raise ComposeError(path, f"depends_on: a cycle ({cycle})")
        state[name] = "visiting"
        for dep, _ in services[name].depends_on:
            visit(dep, (*chain, name))
        state[name] = "done"
        ordered.append(services[name])

    for name in services:
        visit(name, ())
    return tuple(ordered)


def interpolated(
    path: Path, value: Any, env: Mapping[str, str], where: str, unset: list[str]
) -> Any:
    """Compose's ``${VAR}`` interpolation over every value (never keys). A variable that
    is unset and has no default is an empty text, as in Compose (and so in Harbor), and
    is listed in ``unset``."""
    if isinstance(value, dict):
        return {
            k: interpolated(path, v, env, f"{where}.{k}".lstrip("."), unset)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [interpolated(path, v, env, where, unset) for v in value]
    if not isinstance(value, str) or "$" not in value:
        return value

    def fill(m: re.Match[str]) -> str:
        if m["dollar"]:
            return "$"
        if m["other"] is not None:
            raise ComposeError(
                path, f"{where}: the template ${m['other']} is not supported by cleanroom"
            )
        name = m["braced"] or m["bare"]
        found = env.get(name)
        if m["sep"] == ":-" and not found:
            return str(m["default"])
        if m["sep"] == "-" and found is None:
            return str(m["default"])
        if found is None:
            unset.append(f"{where}: the host has no variable {name}; it is empty")
            return ""
        return found

    return _VARIABLE.sub(fill, value)


def _duration(path: Path, value: Any, where: str) -> float | None:
    """A Compose duration (``1m30s``, ``500ms``) in seconds."""
    if value is None:
        return None
    text = str(value).strip()
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ComposeError(path, f"{where}: {value!r} is not a duration such as 10s or 1m30s")
    return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)


def mapping(path: Path, value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ComposeError(path, f"{where}: must be a mapping")
    return value


def only(path: Path, spec: dict[str, Any], allowed: frozenset[str], where: str, what: str) -> None:
    for key in spec:
        if key not in allowed and not extension(key):
            raise refused(path, f"{where}.{key}", what)


def refused(path: Path, key: str, what: str) -> ComposeError:
    return ComposeError(path, f"{key}: not supported by cleanroom ({what})")


def extension(key: Any) -> bool:
    return isinstance(key, str) and key.startswith("x-")


def _text(path: Path, value: Any, where: str, *, numbers: bool = False) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if numbers and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ComposeError(path, f"{where}: must be text")


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
