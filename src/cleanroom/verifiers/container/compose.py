"""A task's ``environment/docker-compose.yaml``: the services that run beside the agent.

Harbor's docker environment merges this file over its own, in which the agent's
container is the service ``main``, and starts the whole project with ``docker compose up
--wait``: every service running, and healthy where it has a healthcheck, before the
agent starts. Services reach each other by their names. cleanroom reads the same file
into typed `Service` records and starts them through its own Docker layer
(`sidecars.py`); this module is the pure part: parsing, ``${VAR}`` interpolation, the
start order, and the refusals.

Every key either has Compose's meaning here or is refused with a `ComposeError` naming
it (``services.db.ports``): a key that would change what runs is never ignored. Of the
``main`` service only ``depends_on`` and ``environment`` are read; its image, command,
limits and network are the task's (``task.toml``), as in Harbor.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

MAIN = "main"
COMPOSE_FILE = "docker-compose.yaml"

# Keys of a service that are read, or kept because they change nothing that runs here
# (``expose`` only documents ports: every port is open on the rollout's network; ``ports``
# would publish them on the host, which no rollout may open, and is kept with a warning;
# ``stop_grace_period``: the services are removed, never stopped, at the end).
_SIDECAR_KEYS = frozenset(
    {
        "image",
        "build",
        "command",
        "entrypoint",
        "environment",
        "user",
        "working_dir",
        "depends_on",
        "healthcheck",
        "restart",
        "init",
        "tmpfs",
        "hostname",
        "container_name",
        "labels",
        "expose",
        "ports",
        "stop_grace_period",
    }
)
_MAIN_KEYS = frozenset({"depends_on", "environment", "ports", "expose"})
_MAIN_WHY = "Harbor's own service, whose image, command, limits and network come from task.toml"
_TOP_KEYS = frozenset({"services", "version", "name"})
_BUILD_KEYS = frozenset({"context", "dockerfile", "args"})
_HEALTH_KEYS = frozenset(
    {"test", "interval", "timeout", "retries", "start_period", "start_interval", "disable"}
)
_CONDITIONS = ("service_started", "service_healthy")
_RESTART = re.compile(r"\A(no|always|unless-stopped|on-failure(:\d+)?)\Z")
_NAME = re.compile(r"\A[a-zA-Z0-9][a-zA-Z0-9_.-]*\Z")
# ``$$``, ``${NAME}``, ``${NAME:-default}``, ``${NAME-default}``, ``$NAME``; any other
# ``${...}`` form (``:?``, ``:+``) is refused rather than misread.
_VARIABLE = re.compile(
    r"\$(?:(?P<dollar>\$)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<sep>:?-)(?P<default>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*)|(?P<other>\{[^}]*\}?))"
)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)")
_DURATION_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ComposeError(ValueError):
    """The compose file cannot be used as it is; says where and why."""

    def __init__(self, path: Path, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


@dataclass(frozen=True)
class Build:
    """``build``: a folder (relative to ``environment/``) and its Dockerfile."""

    context: Path
    dockerfile: str = "Dockerfile"
    args: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Healthcheck:
    """``healthcheck``: run by the Docker daemon in the service's container, as Compose
    asks it to; ``test`` None keeps the image's own ``HEALTHCHECK`` options."""

    test: tuple[str, ...] | None = None
    interval_s: float | None = None
    timeout_s: float | None = None
    retries: int | None = None
    start_period_s: float | None = None

    def docker(self) -> dict[str, Any]:
        """The Engine API's ``Healthcheck`` (durations in nanoseconds)."""
        out: dict[str, Any] = {}
        if self.test is not None:
            out["test"] = list(self.test)
        for key, seconds in (
            ("interval", self.interval_s),
            ("timeout", self.timeout_s),
            ("start_period", self.start_period_s),
        ):
            if seconds is not None:
                out[key] = int(seconds * 1e9)
        if self.retries is not None:
            out["retries"] = self.retries
        return out


@dataclass(frozen=True)
class Service:
    """One service beside ``main``, with the Compose keys cleanroom implements."""

    name: str
    image: str | None = None
    build: Build | None = None
    command: tuple[str, ...] | None = None
    entrypoint: tuple[str, ...] | None = None
    environment: tuple[tuple[str, str], ...] = ()
    user: str | None = None
    working_dir: str | None = None
    # Service name -> ``service_started`` or ``service_healthy``.
    depends_on: tuple[tuple[str, str], ...] = ()
    healthcheck: Healthcheck | None = None
    # Healthcheck disabled (``disable: true`` or ``test: ["NONE"]``): the image's too.
    healthcheck_disabled: bool = False
    restart: str = "no"
    init: bool = False
    tmpfs: tuple[str, ...] = ()
    hostname: str | None = None
    # A second name on the rollout's network (never the container's own: rollouts run
    # side by side), so what reaches the service by that name still does.
    container_name: str | None = None
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ComposeProject:
    """The task's services beside ``main``, in the order they start, and what the file
    says of ``main`` itself."""

    path: Path
    services: tuple[Service, ...] = ()
    main_depends_on: tuple[tuple[str, str], ...] = ()
    main_environment: tuple[tuple[str, str], ...] = ()
    names: frozenset[str] = field(default_factory=frozenset)
    # What was kept with a note: templates whose variable was unset (filled with an
    # empty text, as Compose does), ports that are not published.
    warnings: tuple[str, ...] = ()


def load_compose(environment_dir: Path, env: Mapping[str, str]) -> ComposeProject | None:
    """The compose file in ``environment_dir``, or None when the task has none.

    ``env`` fills ``${VAR}`` templates (Harbor passes the host's environment and the
    task's ``[environment.env]``); `ComposeError` names what cannot be used.
    """
    path = environment_dir / COMPOSE_FILE
    if not path.is_file():
        if (environment_dir / "docker-compose.yml").is_file():
            raise ComposeError(
                environment_dir / "docker-compose.yml",
                f"Harbor reads only {COMPOSE_FILE}; rename the file",
            )
        return None
    return parse_compose(path.read_text(encoding="utf-8"), path, env)


def parse_compose(text: str, path: Path, env: Mapping[str, str]) -> ComposeProject:
    """Parse compose ``text`` (the file at ``path``) into a `ComposeProject`."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ComposeError(path, f"not valid YAML: {exc}") from exc
    doc = _mapping(path, raw, "the file")
    # Keys first: a refused key is named even where its value holds a template only
    # Harbor fills (``${CONTEXT_DIR}`` in a restated main service).
    _check_keys(path, doc)
    warnings: list[str] = []
    doc = _interpolated(path, doc, env, "", warnings)
    services = _mapping(path, doc.get("services"), "services")
    warnings += [
        f"services.{name}.ports: kept, not published (the services reach each other on "
        "their own network; no rollout opens a port of the host)"
        for name, body in services.items()
        if isinstance(body, dict) and "ports" in body
    ]
    if not services:
        raise ComposeError(path, "services: names no service")
    for name in services:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ComposeError(path, f"services: {name!r} is not a service name")
    names = frozenset(services) | {MAIN}  # main is Harbor's, declared or not
    main_depends: tuple[tuple[str, str], ...] = ()
    main_env: tuple[tuple[str, str], ...] = ()
    sidecars: dict[str, Service] = {}
    for name, body in services.items():
        where = f"services.{name}"
        spec = _mapping(path, body if body is not None else {}, where)
        if name == MAIN:
            spec = {k: v for k, v in spec.items() if k in _MAIN_KEYS}
            main_depends = _depends_on(path, spec.get("depends_on"), where, names)
            main_env = _environment(path, spec.get("environment"), where, env)
            continue
        sidecars[name] = _service(path, name, spec, names, env)
    for service in sidecars.values():
        if any(dep == MAIN for dep, _ in service.depends_on):
            raise ComposeError(
                path,
                f"services.{service.name}.depends_on: a service that waits for main is "
                "not supported by cleanroom (main starts last)",
            )
    return ComposeProject(
        path,
        _start_order(path, sidecars),
        main_depends,
        main_env,
        names - {MAIN},
        tuple(warnings),
    )


def _check_keys(path: Path, doc: dict[str, Any]) -> None:
    for key in doc:
        if key not in _TOP_KEYS and not _extension(key):
            raise _refused(path, str(key), "top-level networks, volumes, configs and secrets")
    services = doc.get("services")
    if not isinstance(services, dict):
        return
    for name, body in services.items():
        if not isinstance(body, dict):
            continue
        if name == MAIN:
            restated = {k: v for k, v in body.items() if not _restates_harbor(k, v)}
            _only(path, restated, _MAIN_KEYS, f"services.{name}", _MAIN_WHY)
        else:
            _only(path, body, _SIDECAR_KEYS, f"services.{name}", "this Compose key")


# What Harbor's own compose file says of main, restated in tasks made by its mappers
# (``build: {context: ${CONTEXT_DIR}}``, ``image: ${MAIN_IMAGE_NAME}``...): the task's
# image, its keep-alive command, task.toml's limits and Harbor's log mounts. cleanroom
# does each of these itself, so a restatement changes nothing and is accepted.
_KEEPALIVES = (
    ["sh", "-c", "sleep infinity"],
    ["sleep", "infinity"],
    "sleep infinity",
    ["tail", "-f", "/dev/null"],
    "tail -f /dev/null",
)
_HARBOR_LOG_MOUNTS = {
    f"${{HOST_{n}_PATH}}:${{ENV_{n}_PATH}}" for n in ("VERIFIER_LOGS", "AGENT_LOGS", "ARTIFACTS")
}


def _restates_harbor(key: str, value: Any) -> bool:
    if key == "build":
        context = value.get("context") if isinstance(value, dict) else value
        extra = set(value) - {"context"} if isinstance(value, dict) else set()
        return not extra and context in ("${CONTEXT_DIR}", "$CONTEXT_DIR", ".", "./")
    if key == "image":
        return value in ("${MAIN_IMAGE_NAME}", "$MAIN_IMAGE_NAME")
    if key == "command":
        return value in _KEEPALIVES
    if key == "deploy":
        return value == {"resources": {"limits": {"cpus": "${CPUS}", "memory": "${MEMORY}"}}}
    if key == "volumes":
        return isinstance(value, list) and all(v in _HARBOR_LOG_MOUNTS for v in value)
    return key == "container_name"  # Harbor's mappers name it; the name changes nothing


def _service(
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
        environment=_environment(path, spec.get("environment"), where, env),
        user=_text(path, spec.get("user"), f"{where}.user", numbers=True),
        working_dir=_text(path, spec.get("working_dir"), f"{where}.working_dir"),
        depends_on=_depends_on(path, spec.get("depends_on"), where, names),
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
    spec = {"context": value} if isinstance(value, str) else _mapping(path, value, where)
    _only(path, spec, _BUILD_KEYS, where, "this build option")
    context = _text(path, spec.get("context", "."), f"{where}.context")
    assert context is not None
    if re.match(r"\A[a-z][a-z0-9+.-]*://", context) or context.startswith("git@"):
        raise _refused(path, f"{where}.context", "remote build contexts")
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
    spec = _mapping(path, value, where)
    _only(path, spec, _HEALTH_KEYS, where, "this healthcheck option")
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


def _depends_on(
    path: Path, value: Any, where: str, names: frozenset[str]
) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    where = f"{where}.depends_on"
    found: list[tuple[str, str]] = []
    if isinstance(value, list):
        found = [(str(v), "service_started") for v in value]
    else:
        for dep, spec in _mapping(path, value, where).items():
            options = _mapping(path, spec if spec is not None else {}, f"{where}.{dep}")
            _only(
                path,
                options,
                frozenset({"condition", "required", "restart"}),
                f"{where}.{dep}",
                "this depends_on option",
            )
            condition = options.get("condition", "service_started")
            if condition not in _CONDITIONS:
                raise _refused(path, f"{where}.{dep}.condition", f"condition {condition!r}")
            if options.get("required", True) is not True:
                raise _refused(path, f"{where}.{dep}.required", "optional dependencies")
            found.append((str(dep), str(condition)))
    for dep, _ in found:
        if dep not in names:
            raise ComposeError(path, f"{where}: names {dep!r}, which is not a service")
    return tuple(found)


def _environment(
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
    for key, item in _mapping(path, value, where).items():
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


def _start_order(path: Path, services: dict[str, Service]) -> tuple[Service, ...]:
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


def _interpolated(
    path: Path, value: Any, env: Mapping[str, str], where: str, unset: list[str]
) -> Any:
    """Compose's ``${VAR}`` interpolation over every value (never keys). A variable that
    is unset and has no default is an empty text, as in Compose (and so in Harbor), and
    is listed in ``unset``."""
    if isinstance(value, dict):
        return {
            k: _interpolated(path, v, env, f"{where}.{k}".lstrip("."), unset)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_interpolated(path, v, env, where, unset) for v in value]
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


def _mapping(path: Path, value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ComposeError(path, f"{where}: must be a mapping")
    return value


def _only(path: Path, spec: dict[str, Any], allowed: frozenset[str], where: str, what: str) -> None:
    for key in spec:
        if key not in allowed and not _extension(key):
            raise _refused(path, f"{where}.{key}", what)


def _refused(path: Path, key: str, what: str) -> ComposeError:
    return ComposeError(path, f"{key}: not supported by cleanroom ({what})")


def _extension(key: Any) -> bool:
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
