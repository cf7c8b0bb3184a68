"""How OSWorld's in-VM server turns a ``command`` field into what it runs, and its output.

The server treats ``shell`` by Python truthiness (so the string ``"true"``, and any
non-empty string, means a shell), splits a string command shell-style when there is no
shell, and expands a leading ``~/`` in each item of a list to the user's home.
"""

from __future__ import annotations

import shlex
from typing import Any

from cleanroom.guests.base import Command


class BadCommand(ValueError):
    """A ``command`` field that is neither a string nor a list of strings."""


def guest_command(command: Any, shell: Any, home: str) -> tuple[Command, bool]:
    """The command and shell flag to hand a guest, as OSWorld's ``/execute`` builds them."""
    use_shell = bool(shell)
    if isinstance(command, str):
        if use_shell:
            return command, True
        try:
            command = shlex.split(command)
        except ValueError as exc:
            raise BadCommand(f"cannot split command {command!r}: {exc}") from exc
    if not isinstance(command, list) or not all(isinstance(a, str) for a in command):
        raise BadCommand(f"command must be a string or a list of strings, got {command!r}")
    if not command:
        raise BadCommand("command is empty")
    return [home + arg[1:] if arg.startswith("~/") else arg for arg in command], use_shell


def substitute_placeholders(command: Any, values: dict[str, str]) -> Any:
    """Fill ``{NAME}`` placeholders in a string command or in each item of a list.

    Only setup and postconfig commands get this; getter commands run verbatim.
    """
    if isinstance(command, str):
        return _fill(command, values)
    if isinstance(command, list):
        return [_fill(item, values) if isinstance(item, str) else item for item in command]
    return command


def _fill(text: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


def decode_output(data: bytes) -> str:
    """Command output as OSWorld's server reads it in text mode: UTF-8, universal newlines.

    Nothing is stripped; a trailing newline stays. Bytes that are not UTF-8 become U+FFFD
    (for logs and setup steps; the command getters give None for such output before it
    gets here, as OSWorld's server does).
    """
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
