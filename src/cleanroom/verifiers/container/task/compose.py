"""A task's ``environment/docker-compose.yaml``: the services that run beside the agent.

Harbor's docker environment merges this file over its own, in which the agent's
container is the service ``main``, and starts the whole project with ``docker compose up
--wait``: every service running, and healthy where it has a healthcheck, before the
agent starts. Services reach each other by their names. cleanroom reads the same file
into typed `Service` records and starts them through its runtime
(`run.sidecars`); this module and the two beside it are the pure part: the records
(`compose_model`), each key's value (`compose_fields`: ``${VAR}`` interpolation, the start
order) and the file as a whole with its refusals (here).

Every key either has Compose's meaning here or is refused with a `ComposeError` naming
it (``services.db.ports``): a key that would change what runs is never ignored. Of the
``main`` service only ``depends_on`` and ``environment`` are read; its image, command,
limits and network are the task's (``task.toml``), as in Harbor.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from cleanroom.verifiers.container.task import compose_fields as fields
from cleanroom.verifiers.container.task.compose_model import (
    COMPOSE_FILE,
    MAIN,
    ComposeError,
    ComposeProject,
    Service,
)

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
_NAME = re.compile(r"\A[a-zA-Z0-9][a-zA-Z0-9_.-]*\Z")


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
    doc = fields.mapping(path, raw, "the file")
    # Keys first: a refused key is named even where its value holds a template only
    # Harbor fills (``${CONTEXT_DIR}`` in a restated main service).
    _check_keys(path, doc)
    warnings: list[str] = []
    doc = fields.interpolated(path, doc, env, "", warnings)
    services = fields.mapping(path, doc.get("services"), "services")
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
        spec = fields.mapping(path, body if body is not None else {}, where)
        if name == MAIN:
            spec = {k: v for k, v in spec.items() if k in _MAIN_KEYS}
            main_depends = fields.depends_on(path, spec.get("depends_on"), where, names)
            main_env = fields.environment(path, spec.get("environment"), where, env)
            continue
        sidecars[name] = fields.service(path, name, spec, names, env)
    for service in sidecars.values():
        if any(dep == MAIN for dep, _ in service.depends_on):
            raise ComposeError(
                path,
                f"services.{service.name}.depends_on: a service that waits for main is "
                "not supported by cleanroom (main starts last)",
            )
    return ComposeProject(
        path,
        fields.start_order(path, sidecars),
        main_depends,
        main_env,
        names - {MAIN},
        tuple(warnings),
    )


def _check_keys(path: Path, doc: dict[str, Any]) -> None:
    for key in doc:
        if key not in _TOP_KEYS and not fields.extension(key):
            raise fields.refused(path, str(key), "top-level networks, volumes, configs and secrets")
    services = doc.get("services")
    if not isinstance(services, dict):
        return
    for name, body in services.items():
        if not isinstance(body, dict):
            continue
        if name == MAIN:
            restated = {k: v for k, v in body.items() if not _restates_harbor(k, v)}
            fields.only(path, restated, _MAIN_KEYS, f"services.{name}", _MAIN_WHY)
        else:
            fields.only(path, body, _SIDECAR_KEYS, f"services.{name}", "this Compose key")


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
