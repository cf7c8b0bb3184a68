"""Harbor's ``${VAR}`` templates and the rewrite of a Dockerfile's base images."""

from __future__ import annotations

import re

from cleanroom.verifiers.container.task.errors import TemplateError

_TEMPLATE_RE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")  # Harbor's, whole values only
_FROM_RE = re.compile(r"\A(\s*FROM\s+(?:--\S+\s+)*)(\S+)(.*)\Z", re.IGNORECASE | re.DOTALL)


def resolve_env(env: dict[str, str], host: dict[str, str], where: str) -> dict[str, str]:
    """Harbor's templates: a whole value ``${VAR}`` or ``${VAR:-default}`` is read from
    ``host``; any other value is literal. An unset variable with no default is a
    `TemplateError` naming the key and the variable."""
    resolved: dict[str, str] = {}
    for key, value in env.items():
        m = _TEMPLATE_RE.fullmatch(value)
        if m is None:
            resolved[key] = value
        elif m[1] in host:
            resolved[key] = host[m[1]]
        elif m[2] is not None:
            resolved[key] = m[2]
        else:
            raise TemplateError(
                f"{where}.{key}: the host has no variable {m[1]} and the template gives "
                "no default (${" + m[1] + ":-default})"
            )
    return resolved


def rewrite_base_images(dockerfile: str, image_map: dict[str, str]) -> str:
    """``FROM`` lines whose image is a key of ``image_map`` name its value instead."""
    out: list[str] = []
    for line in dockerfile.splitlines(keepends=True):
        m = _FROM_RE.match(line)
        if m and m[2] in image_map:
            line = f"{m[1]}{image_map[m[2]]}{m[3]}"
        out.append(line)
    return "".join(out)
