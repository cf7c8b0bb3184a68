"""OSWorld's ``DesktopEnv`` over an environment of a cleanroom run, for OSWorld's own
runner in a process of its own: each episode is a rollout of the run's windows.

``cleanroom run --tasks osworld-agent --screen 1920x1080`` serves its acting environments
to agents that run outside it (`osworld_outside`): OSWorld's interface over HTTP
(`osworld_http`) and an equivalent of OSWorld's in-VM server (`osworld_vm_server`), both
opened per environment by the keys in the run's connection file. `RunDesktopEnv` takes
OSWorld's constructor arguments, plus ``run=`` (the run folder or its connection file),
and gives what OSWorld's runner (``lib_run_single.run_single_example``) and its agents
read:

- ``reset(task_config=...)`` waits for the run's next rollout in the environment (the
  window mints its token and resets the environment), then sets the task up; the first
  observation. The episode's actions are of this ``action_space``;
- ``step(action, pause)``, ``evaluate()`` (cleanroom's score; `InvalidEvaluation` when
  the infrastructure kept it from being made), then ``last_eval_details`` and
  ``last_outcome``, as `osworld_desktop_env.OSWorldDesktopEnv` keeps them;
- ``vm_ip`` (``ENV:KEY@ADDRESS``: ``http://{vm_ip}:5000`` reaches the in-VM server for
  this environment alone), ``controller`` (`osworld_vm_client.VMServerController`, whose
  calls go there: commands, files, the recording), and ``_get_obs()``, read through it.

The run's window judges the episode like any rollout: its isolation trials, the canary
and the token sweep run around it, and a leak they find makes the rollout invalid in
the run record after the agent was answered. What counts is the run's record
(``cleanroom report RUN``), not the score the agent was told.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cleanroom.core.outcomes import Outcome
from cleanroom.rollouts.osworld_http import OSWorldHTTPEnv, read_connection
from cleanroom.rollouts.osworld_outside import CONNECTION_FILE, OUTSIDE_TASK
from cleanroom.rollouts.osworld_provider import (
    DEFAULT_SCREEN,
    PROVIDER_NAME,
    UnsupportedArgument,
    refuse_unsupported,
    task_cache_dir,
)
from cleanroom.rollouts.osworld_vm_client import VMServerController
from cleanroom.rollouts.osworld_vm_server import VM_SERVER_PORT


class RunDesktopEnv:
    """OSWorld's ``DesktopEnv`` over environment ``path_to_vm`` of the run at ``run``.
    ``wait_s`` is how long a reset may wait for the run's next rollout."""

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
        run: str | os.PathLike[str] | None = None,
        wait_s: float = 3600.0,
    ) -> None:
        refuse_unsupported(
            provider_name, snapshot_name, action_space, require_terminal, os_type, enable_proxy
        )
        if run is None:
            raise UnsupportedArgument("run", None, "pass the run folder or its connection file")
        path = Path(run)
        connection = read_connection(path / CONNECTION_FILE if path.is_dir() else path)
        if not path_to_vm or path_to_vm not in connection.keys:
            raise UnsupportedArgument(
                "path_to_vm",
                path_to_vm,
                f"name an environment of the run: {sorted(connection.keys)}",
            )
        vm_ip = connection.vm_ip(path_to_vm)
        if vm_ip is None or connection.screen is None:
            raise UnsupportedArgument(
                "run",
                str(run),
                f"a run that serves OSWorld's in-VM server (--tasks {OUTSIDE_TASK})",
            )
        width, height = (int(v) for v in screen_size)
        if (width, height) != connection.screen:
            have = "x".join(map(str, connection.screen))
            raise UnsupportedArgument(
                "screen_size",
                tuple(screen_size),
                f"the run's screens are {have}; pass that, or start the run with"
                f" --screen {width}x{height}",
            )
        self._episodes = OSWorldHTTPEnv(
            connection.url, path_to_vm, connection.keys[path_to_vm], wait_s=wait_s
        )
        # What OSWorld's DesktopEnv holds and its runners and agents read.
        self.vm_ip = vm_ip
        self.controller = VMServerController(vm_ip)
        self.provider_name = provider_name
        self.region = region
        self.path_to_vm = path_to_vm
        self.snapshot_name = snapshot_name
        self.action_space = action_space
        self.cache_dir_base = cache_dir
        self.screen_width, self.screen_height = width, height
        self.screen_size = (width, height)
        self.headless = headless
        self.require_a11y_tree = require_a11y_tree
        self.require_terminal = require_terminal
        self.os_type = os_type
        self.enable_proxy = enable_proxy
        self.client_password = client_password or "password"
        self.server_port = VM_SERVER_PORT
        # OSWorld's other in-VM ports; nothing listens on them here yet.
        self.chromium_port, self.vnc_port, self.vlc_port = 9222, 8006, 8080
        self.current_use_proxy = False
        self.task_id: str | None = None
        self.cache_dir: str | None = None
        self.instruction: str | None = None
        self.action_history: list[Any] = []

    # -- OSWorld's methods ----------------------------------------------------------------

    def reset(
        self,
        task_config: dict[str, Any] | None = None,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Wait for the run's next rollout in this environment, set the task up on it;
        the first observation."""
        obs = self._episodes.reset(task_config, action_space=self.action_space)
        self.action_history.clear()
        self.task_id, self.cache_dir = task_cache_dir(self.cache_dir_base, task_config)
        self.instruction = obs.get("instruction")
        return obs

    def step(self, action: Any, pause: float = 2.0) -> tuple[dict[str, Any], float, bool, dict]:
        """Take one action; ``(observation, 0, done, info)`` as OSWorld returns them."""
        self.action_history.append(action)
        return self._episodes.step(action, pause=pause)

    def evaluate(self) -> float:
        """End the episode: cleanroom's score of it (`InvalidEvaluation` when the
        infrastructure kept it from being made; the outcome is kept either way)."""
        return self._episodes.evaluate()

    @property
    def last_outcome(self) -> Outcome | None:
        """The last evaluation's outcome, typed."""
        return self._episodes.last_outcome

    @property
    def last_eval_details(self) -> dict[str, Any] | None:
        """The last evaluation's outcome as a dict (``outcome``, ``score``, ``reason``,
        ``detail``, ``details``)."""
        return self._episodes.last_eval_details

    def _get_obs(self) -> dict[str, Any]:
        """The observation now, read through the in-VM server as OSWorld's ``_get_obs``
        reads it."""
        return {
            "screenshot": self.controller.get_screenshot(),
            "accessibility_tree": (
                self.controller.get_accessibility_tree() if self.require_a11y_tree else None
            ),
            "terminal": None,
            "instruction": self.instruction,
        }

    @property
    def vm_platform(self) -> str | None:
        """``Linux``, as OSWorld's getters ask it."""
        return self.controller.get_vm_platform()

    @property
    def vm_screen_size(self) -> dict[str, int] | None:
        """The screen's size, as OSWorld's server answers it."""
        return self.controller.get_vm_screen_size()

    def close(self) -> None:
        """Close the connections; the run keeps the environment."""
        self.controller.close()
        self._episodes.close()
