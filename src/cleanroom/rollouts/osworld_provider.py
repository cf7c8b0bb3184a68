"""OSWorld's ``DesktopEnv``, constructed as OSWorld's run scripts construct it, over one
environment of a cleanroom pool.

``DesktopEnv(provider_name="cleanroom", path_to_vm="env01", action_space=...,
screen_size=(1920, 1080), headless=True, require_a11y_tree=True, os_type="Ubuntu",
pool=pool)`` takes OSWorld's arguments by their names. The provider name `PROVIDER_NAME`
means "an environment of the pool given as ``pool``"; ``path_to_vm`` names the
environment. What cannot mean anything here is refused by name (`UnsupportedArgument`):
another provider, another OS, a snapshot other than the reset state, a terminal, a
proxy, and a screen size other than the pool's (a pool is started at OSWorld's size
with ``PoolConfig(screen=ScreenSize(1920, 1080))``). ``region`` and ``headless`` are
accepted and mean nothing: the pool's displays are virtual and local.

On top of `OSWorldDesktopEnv` it serves an equivalent of OSWorld's in-VM server for this
environment alone (`osworld_vm_server`) and sets ``vm_ip`` to reach it, with the
attributes OSWorld's runners and agents read (``server_port``, ``chromium_port``,
``screen_width``, ...). `close` stops that server; the pool keeps the environment.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from typing import Any

from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.errors import CleanroomError
from cleanroom.environments.interface import Desktops
from cleanroom.environments.osworld_env.actions import ACTION_SPACES
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.rollouts.osworld_desktop_env import OSWorldDesktopEnv
from cleanroom.rollouts.osworld_vm_server import (
    VM_SERVER_PORT,
    build_vm_server_app,
    serving_vm_server,
    vm_ip,
)
from cleanroom.verifiers.osworld.settings import CheckSettings

PROVIDER_NAME = "cleanroom"
# OSWorld's default screen, read from the same variables its constructor reads.
DEFAULT_SCREEN = (
    int(os.environ.get("SCREEN_WIDTH", 1920)),
    int(os.environ.get("SCREEN_HEIGHT", 1080)),
)


class UnsupportedArgument(CleanroomError, ValueError):
    """An argument of OSWorld's ``DesktopEnv`` with a value that means nothing for a
    pool environment; ``name`` is the argument, the message says what to pass."""

    def __init__(self, name: str, value: Any, instead: str) -> None:
        super().__init__(f"DesktopEnv({name}={value!r}) is not supported here: {instead}")
        self.name = name
        self.value = value


class DesktopEnv(OSWorldDesktopEnv):
    """OSWorld's ``DesktopEnv`` over environment ``path_to_vm`` of ``pool``."""

    def __init__(
        self,
        provider_name: str = PROVIDER_NAME,
        region: str | None = None,
        path_to_vm: str | None = None,
        snapshot_name: str = "init_state",
        action_space: str = "pyautogui",
        cache_dir: str = "cache",
        screen_size: tuple[int, int] = DEFAULT_SCREEN,
        headless: bool = True,
        require_a11y_tree: bool = True,
        require_terminal: bool = False,
        os_type: str = "Ubuntu",
        enable_proxy: bool = False,
        client_password: str = "",
        *,
        pool: Desktops | None = None,
        settings: CheckSettings | None = None,
    ) -> None:
        refuse_unsupported(
            provider_name, snapshot_name, action_space, require_terminal, os_type, enable_proxy
        )
        if pool is None:
            raise UnsupportedArgument("pool", None, "pass the pool the environment is in")
        if not path_to_vm:
            raise UnsupportedArgument(
                "path_to_vm", path_to_vm, f"name an environment of the pool: {_acting(pool)}"
            )
        if path_to_vm not in _acting(pool):
            raise UnsupportedArgument(
                "path_to_vm", path_to_vm, f"name an environment of the pool: {_acting(pool)}"
            )
        screen = pool.screen_size(path_to_vm)
        width, height = (int(v) for v in screen_size)
        if (width, height) != (screen.width, screen.height):
            raise UnsupportedArgument(
                "screen_size",
                tuple(screen_size),
                f"the pool's screens are {screen.width}x{screen.height}; pass that, or start "
                f"the pool with PoolConfig(screen=ScreenSize({width}, {height}))",
            )
        if settings is None:
            settings = CheckSettings(
                screen_width=width,
                screen_height=height,
                client_password=client_password or "password",
            )
        super().__init__(
            LocalHandle(pool, path_to_vm),
            action_space=action_space,
            require_a11y_tree=require_a11y_tree,
            require_terminal=require_terminal,
            settings=settings,
        )
        # What OSWorld's DesktopEnv holds and its runners and agents read.
        self.provider_name = provider_name
        self.region = region
        self.path_to_vm = path_to_vm
        self.snapshot_name = snapshot_name
        self.cache_dir_base = cache_dir
        self.screen_width, self.screen_height = width, height
        self.headless = headless
        self.os_type = os_type
        self.enable_proxy = enable_proxy
        self.client_password = client_password or "password"
        self.server_port = VM_SERVER_PORT
        # OSWorld's other in-VM ports; nothing listens on them here yet.
        self.chromium_port, self.vnc_port, self.vlc_port = 9222, 8006, 8080
        self.current_use_proxy = False
        self.task_id: str | None = None
        self.cache_dir: str | None = None
        self._server = contextlib.ExitStack()
        key = secrets.token_urlsafe(32)
        app = build_vm_server_app({path_to_vm: self.controller}.get, key)
        address = self._server.enter_context(serving_vm_server(app))
        self.vm_ip = vm_ip(path_to_vm, key, address)
        self.controller.vm_ip = self.vm_ip

    def begin(self, task_config: dict[str, Any] | None) -> dict[str, Any]:
        """The task's setup, with OSWorld's per-task cache folder (``cache_dir``, made
        beneath the constructor's ``cache_dir`` as OSWorld makes it) for its getters."""
        self.task_id, self.cache_dir = task_cache_dir(self.cache_dir_base, task_config)
        return super().begin(task_config)

    @property
    def vm_platform(self) -> str:
        """``Linux``, as OSWorld's getters ask it."""
        return self.controller.get_vm_platform()

    @property
    def vm_screen_size(self) -> dict[str, int]:
        """The screen's size, as OSWorld's server answers it."""
        return self.controller.get_vm_screen_size()

    def close(self) -> None:
        """Stop this environment's server and any recording; the pool keeps the
        environment."""
        self.controller.recorder.stop()
        self._server.close()


def task_cache_dir(base: str, task_config: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """The task's id and its cache folder beneath ``base`` (made), as OSWorld's
    ``DesktopEnv`` makes it for its getters; ``(None, None)`` for a task with no id, or
    an id that would lead out of ``base``."""
    task_id = task_config.get("id") if task_config is not None else None
    if isinstance(task_id, str) and task_id not in ("", ".", "..") and "/" not in task_id:
        folder = os.path.join(base, task_id)
        os.makedirs(folder, exist_ok=True)
        return task_id, folder
    return None, None


def refuse_unsupported(
    provider_name: str,
    snapshot_name: str,
    action_space: str,
    require_terminal: bool,
    os_type: str,
    enable_proxy: bool,
) -> None:
    """Raise `UnsupportedArgument` for the first of OSWorld's ``DesktopEnv`` arguments
    whose value means nothing for a cleanroom environment."""
    if provider_name != PROVIDER_NAME:
        raise UnsupportedArgument(
            "provider_name", provider_name, f"use provider_name={PROVIDER_NAME!r}"
        )
    if snapshot_name != "init_state":
        raise UnsupportedArgument(
            "snapshot_name", snapshot_name, "a reset is a fresh generation: use 'init_state'"
        )
    if action_space not in ACTION_SPACES:
        raise UnsupportedArgument("action_space", action_space, f"use one of {ACTION_SPACES}")
    if require_terminal:
        raise UnsupportedArgument(
            "require_terminal",
            True,
            "no terminal's text is read here (OSWorld reads it from gnome-terminal only)",
        )
    if os_type != "Ubuntu":
        raise UnsupportedArgument("os_type", os_type, "the pool's desktops are Linux: 'Ubuntu'")
    if enable_proxy:
        raise UnsupportedArgument("enable_proxy", True, "there is no proxy here")


def _acting(pool: Desktops) -> list[str]:
    return [name for name in pool.names if name != CANARY_ENV]
