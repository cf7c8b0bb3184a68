"""The ``env:<name>`` guest: commands run inside a desktop environment of the running pool.

A command runs as the environment's Unix user, in its home, with its DISPLAY,
XAUTHORITY, D-Bus session and XDG_RUNTIME_DIR, so a task's setup and checker see the
same desktop the policy acted on. The pool is found through its run folder (``--run``
of ``cleanroom envs up``; by default the most recently started pool).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from cleanroom.environments import apps
from cleanroom.environments.errors import StartError
from cleanroom.environments.providers import (
    SandboxedProcess,
    SandboxEntry,
    enter_described,
    runtime_environment,
)
from cleanroom.guests.base import GuestError
from cleanroom.guests.local import LocalGuest

RUN_ENV = "CLEANROOM_RUN"
_SESSION_KEYS = ("DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS")


def environment_details(name: str, run_dir: Path | None = None) -> dict[str, Any]:
    """The pool's live description of one environment; `GuestError` if unreachable."""
    from cleanroom.environments.errors import PoolError
    from cleanroom.environments.providers import PoolProcess

    run = run_dir or (Path(os.environ[RUN_ENV]) if os.environ.get(RUN_ENV) else None)
    try:
        client = PoolProcess.connect(run).client()
        try:
            status = client.status()
        finally:
            client.close()
    except PoolError as exc:
        raise GuestError(f"no running pool to find {name!r} in: {exc}") from exc
    for env in status["environments"]:
        if env["name"] == name:
            return dict(env)
    known = ", ".join(e["name"] for e in status["environments"])
    raise GuestError(f"the pool has no environment {name!r} (it has {known})")


class DesktopGuest(LocalGuest):
    """A `LocalGuest` whose commands also get the environment's desktop session."""

    kind = "env"
    has_desktop = True

    def __init__(self, name: str, details: dict[str, Any]) -> None:
        self.env_name = name
        self.details = details
        self._session = {
            "DISPLAY": details["display"],
            "XAUTHORITY": details["xauthority"],
            "XDG_RUNTIME_DIR": details["runtime_dir"],
            "DBUS_SESSION_BUS_ADDRESS": details["dbus"],
        }
        if any(not v for v in self._session.values()):
            raise GuestError(f"{name} has no running desktop session right now")
        super().__init__(user=details["user"], home=details["home"])

    def _popen_kwargs(self, user: str | None) -> tuple[dict[str, Any], Any]:
        kwargs, account = super()._popen_kwargs(user)
        kwargs["env"] = {**kwargs["env"], **self._session, **apps.ENVIRONMENT}
        return kwargs, account

    def _popen(
        self, argv: list[str], kwargs: dict[str, Any], account: Any
    ) -> subprocess.Popen[bytes]:
        sandbox = self.details.get("sandbox")
        if not sandbox:
            return super()._popen(argv, kwargs, account)
        # The command runs where the environment's programs run: in its sandbox, which
        # the container runtime enters as the user, with the session's environment.
        cwd = kwargs.pop("cwd")
        env = kwargs.pop("env")
        for key in ("user", "group", "extra_groups"):
            kwargs.pop(key, None)
        try:
            entry = SandboxEntry(argv, account.pw_uid, account.pw_gid, cwd, env)
            command, pid_file = enter_described(sandbox, entry)
        except StartError as exc:
            raise GuestError(f"{self.env_name}: {exc}") from exc
        return SandboxedProcess(command, pid_file, cwd="/", env=runtime_environment(), **kwargs)

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "kind": self.kind,
            "env": self.env_name,
            **{k.lower(): v for k, v in self._session.items() if k in _SESSION_KEYS},
        }


def open_desktop_guest(name: str, run_dir: Path | None = None) -> DesktopGuest:
    """The guest for environment ``name`` of the running pool."""
    return DesktopGuest(name, environment_details(name, run_dir))
