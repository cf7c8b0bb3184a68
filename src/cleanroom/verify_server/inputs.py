"""Parsing and validating request bodies: pure functions from bytes to typed values.

Nothing here trusts its input: every failure is a named `ApiError` that says which field
is at fault, and the form body is decoded by hand so the submitted bytes come through
exactly (a generic form parser would replace undecodable bytes instead of refusing them).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

from cleanroom.core.tokens import ENV_PATTERN, RolloutId, TokenError
from cleanroom.core.tokens import parse as parse_token
from cleanroom.verify_server.errors import InvalidField, MalformedRequest

TTL_MIN_S = 1.0
TTL_MAX_S = 86_400.0
# One report covers at most a few seconds of frames even on a fast display; anything
# larger is not a frame count a real page produced.
MAX_FRAMES_PER_REPORT = 1_000
MAX_WINDOW = 10**6 - 1

_ENV_RE = re.compile(rf"{ENV_PATTERN}\Z")
_BAD_ESCAPE_RE = re.compile(rb"%(?![0-9A-Fa-f]{2})")
_ESCAPES_RE = re.compile(rb"[%+&]")  # the bytes that make a form value differ from its text
_LEASE_FIELDS = frozenset({"env", "rollout_id", "token", "window", "ttl_s"})


@dataclass(frozen=True, slots=True)
class LeaseRequest:
    """A validated request for a lease: all fields agree with the token."""

    env: str
    rollout_id: str
    token: str
    window: int
    ttl_s: float


def is_urlencoded(content_type: str | None) -> bool:
    """Whether a Content-Type header names ``application/x-www-form-urlencoded``."""
    if content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == "application/x-www-form-urlencoded"


def parse_urlencoded(body: bytes) -> dict[str, list[bytes]]:
    """Decode an ``application/x-www-form-urlencoded`` body to raw byte values, keeping order.

    ``+`` is a space and ``%XX`` a byte; a ``%`` not followed by two hex digits is refused
    rather than guessed at. Field names must be UTF-8; values are returned as bytes.
    """
    if _BAD_ESCAPE_RE.search(body):
        raise MalformedRequest("form body has a % not followed by two hex digits")
    fields: dict[str, list[bytes]] = {}
    for pair in body.split(b"&"):
        if not pair:
            continue
        name, _, value = pair.partition(b"=")
        try:
            key = unquote_to_bytes(name.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedRequest("form field name is not valid UTF-8") from None
        fields.setdefault(key, []).append(unquote_to_bytes(value.replace(b"+", b" ")))
    return fields


def form_token(body: bytes) -> bytes:
    """The ``token`` field of a form body, byte for byte; other fields are ignored.

    The value must be valid UTF-8 (so it can be returned as JSON text unchanged) and
    appear exactly once (two values would make the submission ambiguous).
    """
    if body.startswith(b"token=") and not _ESCAPES_RE.search(body):
        # A body that is one token field with nothing escaped (a browser's form holding a
        # token) decodes to itself: the same answer as the general parser, without it.
        value = body[6:]
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedRequest("token is not valid UTF-8", field="token") from None
        return value
    values = parse_urlencoded(body).get("token")
    if not values:
        raise InvalidField("token", "the form has no token field")
    if len(values) > 1:
        raise InvalidField("token", "the form has more than one token field")
    value = values[0]
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedRequest("token is not valid UTF-8", field="token") from None
    return value


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        raise MalformedRequest("body is not valid JSON") from None
    if not isinstance(data, dict):
        raise MalformedRequest("body must be a JSON object")
    return data


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_lease_request(body: bytes) -> LeaseRequest:
    """Validate a ``POST /v1/leases`` body; the token must name the env and the rollout id."""
    data = _json_object(body)
    unknown = sorted(set(data) - _LEASE_FIELDS)
    if unknown:
        raise InvalidField(unknown[0], f"unknown field {unknown[0]!r}")
    for name in ("env", "rollout_id", "token", "window", "ttl_s"):
        if name not in data:
            raise InvalidField(name, f"missing field {name!r}")

    env = data["env"]
    if not isinstance(env, str) or not _ENV_RE.match(env):
        raise InvalidField("env", "env must look like env01")

    raw_rollout = data["rollout_id"]
    try:
        if not isinstance(raw_rollout, str):
            raise TokenError("rollout_id must be a string")
        rollout = RolloutId.parse(raw_rollout)
    except TokenError as exc:
        raise InvalidField("rollout_id", str(exc)) from None
    if rollout.env != env:
        raise InvalidField("rollout_id", f"rollout id {raw_rollout} is not in {env}")

    raw_token = data["token"]
    try:
        if not isinstance(raw_token, str):
            raise TokenError("token must be a string")
        token = parse_token(raw_token)
    except TokenError as exc:
        raise InvalidField("token", str(exc)) from None
    if token.env != env:
        raise InvalidField("token", f"token names {token.env}, not {env}")
    if token.rollout_id != str(rollout):
        raise InvalidField("token", f"token belongs to {token.rollout_id}, not {rollout}")

    window = data["window"]
    if not _is_int(window) or not 0 <= window <= MAX_WINDOW:
        raise InvalidField("window", f"window must be an integer from 0 to {MAX_WINDOW}")
    if window != rollout.window:
        raise InvalidField("window", f"window {window} is not the rollout's window")

    ttl = data["ttl_s"]
    if not isinstance(ttl, int | float) or isinstance(ttl, bool) or not math.isfinite(ttl):
        raise InvalidField("ttl_s", "ttl_s must be a number of seconds")
    if not TTL_MIN_S <= ttl <= TTL_MAX_S:
        raise InvalidField("ttl_s", f"ttl_s must be from {TTL_MIN_S:g} to {TTL_MAX_S:g}")

    return LeaseRequest(env, str(rollout), str(token), window, float(ttl))


def parse_frames_report(body: bytes) -> int:
    """The frame delta of a ``POST /v1/frames/{lease_id}`` body: ``{"frames": n}``."""
    data = _json_object(body)
    if set(data) != {"frames"}:
        raise InvalidField("frames", 'the body must be exactly {"frames": n}')
    frames = data["frames"]
    if not _is_int(frames) or not 0 <= frames <= MAX_FRAMES_PER_REPORT:
        raise InvalidField("frames", f"frames must be an integer from 0 to {MAX_FRAMES_PER_REPORT}")
    return int(frames)


def parse_window(value: str | None) -> int:
    """The ``window`` query parameter of the audit: a decimal integer from 0."""
    if value is None:
        raise InvalidField("window", "the window query parameter is required")
    if not value.isascii() or not value.isdigit() or len(value) > 6:
        raise InvalidField("window", f"window must be an integer from 0 to {MAX_WINDOW}")
    return int(value)
