"""Guests: the environments a verifier runs commands in, behind one small interface.

``open_guest("local")``, ``open_guest("docker:<container>")`` or
``open_guest("env:env01")`` (a desktop environment of the running pool) returns a `Guest`. A new
kind of guest is one adapter module plus one entry in ``_OPENERS``.
"""

from __future__ import annotations

from collections.abc import Callable

from cleanroom.environments.interface import DESKTOP_SKELETON
from cleanroom.guests.base import (
    CommandNotStarted,
    Guest,
    GuestError,
    GuestTimeout,
    UnknownGuestKind,
)


def _open_local(arg: str, home: str | None, user: str | None) -> Guest:
    from cleanroom.guests.local import LocalGuest

    if arg:
        raise UnknownGuestKind(f"the local guest takes no argument, got 'local:{arg}'")
    return LocalGuest(user=user, home=home)


def _open_docker(arg: str, home: str | None, user: str | None) -> Guest:
    from cleanroom.guests.docker import DockerGuest

    if not arg:
        raise UnknownGuestKind("name the container: docker:<container name or id>")
    return DockerGuest(arg, user=user, home=home)


def _open_env(arg: str, home: str | None, user: str | None) -> Guest:
    from cleanroom.guests.desktop import open_desktop_guest

    if not arg:
        raise UnknownGuestKind("name the environment: env:<name>, such as env:env01")
    if home or user:
        raise UnknownGuestKind("an env: guest has its own user and home; drop --home/--user")
    return open_desktop_guest(arg)


# kind -> opener(argument after the colon, home, user)
_OPENERS: dict[str, Callable[[str, str | None, str | None], Guest]] = {
    "local": _open_local,
    "docker": _open_docker,
    "env": _open_env,
}

GUEST_SPECS = ("local", "docker:<container>", "env:<environment>")


def open_guest(spec: str, *, home: str | None = None, user: str | None = None) -> Guest:
    """Open the guest a spec names: ``local``, ``docker:<container>`` or ``env:<name>``.

    Raises `UnknownGuestKind` for a spec naming no known kind and `GuestError` when the
    guest cannot be reached.
    """
    kind, _, arg = spec.partition(":")
    opener = _OPENERS.get(kind)
    if opener is None:
        known = ", ".join(GUEST_SPECS)
        raise UnknownGuestKind(f"unknown guest {spec!r}; known kinds: {known}")
    return opener(arg, home, user)


__all__ = [
    "DESKTOP_SKELETON",
    "GUEST_SPECS",
    "CommandNotStarted",
    "Guest",
    "GuestError",
    "GuestTimeout",
    "UnknownGuestKind",
    "open_guest",
]
