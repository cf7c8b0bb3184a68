"""OSWorld's runner and a scripted agent for it, as the integration tests drive them.

`run_single_example` makes the calls OSWorld's runner (``lib_run_single``) makes, in its
order: ``env.reset(task_config=...)``, ``agent.reset(logger, vm_ip=env.vm_ip)``,
``env._get_obs()``, ``env.controller.start_recording()``, ``agent.predict`` and
``env.step`` per action until ``done``, ``env.evaluate()``, and
``env.controller.end_recording(path)``. `ScriptedAgent` solves the rename task (click the
terminal, type the command, DONE) in each code space, and reaches its VM's server at
``http://{vm_ip}:5000`` as OSWorld's agents that build their own client do.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
from collections.abc import Callable
from typing import Any

import httpx

RENAME = "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2"


def run_single_example(
    agent: Any,
    env: Any,
    example: dict[str, Any],
    max_steps: int,
    instruction: str,
    args: Any,
    example_result_dir: str,
    scores: list[float],
) -> None:
    """OSWorld's runner's calls, in its order (its waits for a VM to settle left out)."""
    runtime_logger = logging.getLogger(f"desktopenv.example.{example['id']}")
    env.reset(task_config=example)
    try:
        agent.reset(runtime_logger, vm_ip=env.vm_ip)
    except Exception:
        agent.reset(vm_ip=env.vm_ip)
    obs = env._get_obs()
    done = False
    step_idx = 0
    env.controller.start_recording()
    while not done and step_idx < max_steps:
        response, actions = agent.predict(instruction, obs)
        for action in actions:
            stamp = datetime.datetime.now().strftime("%Y%m%d@%H%M%S%f")
            obs, reward, done, info = env.step(action, args.sleep_after_execution)
            with open(
                os.path.join(example_result_dir, f"step_{step_idx + 1}_{stamp}.png"), "wb"
            ) as f:
                f.write(obs["screenshot"])
            with open(os.path.join(example_result_dir, "traj.jsonl"), "a") as f:
                entry = {"step_num": step_idx + 1, "response": response, "action": action}
                f.write(json.dumps({**entry, "reward": reward, "done": done, "info": info}) + "\n")
            if done:
                break
        step_idx += 1
    result = env.evaluate()
    scores.append(result)
    with open(os.path.join(example_result_dir, "result.txt"), "w", encoding="utf-8") as f:
        f.write(f"{result}\n")
    env.controller.end_recording(os.path.join(example_result_dir, "recording.mp4"))


class ScriptedAgent:
    """Clicks the terminal, types the rename and Enter, then says DONE, each action in
    its space's form. It learns its screen from its VM's server, as OSWorld's agents
    that build their own client from ``vm_ip`` do."""

    def __init__(
        self, action_space: str, terminal: Any, before_typing: Callable[[str], None] | None = None
    ) -> None:
        self.action_space = action_space
        self.terminal = terminal  # where the terminal can be clicked, read when asked
        # What the agent does by hand before it types (given its vm_ip): a test's leak.
        self.before_typing = before_typing
        self.vm_ip: str | None = None
        self.screen: dict[str, int] | None = None
        self.turn = 0

    def reset(self, _logger: Any = None, vm_ip: str | None = None, **_: Any) -> None:
        self.vm_ip = vm_ip
        self.turn = 0
        with httpx.Client(trust_env=False) as client:
            self.screen = client.post(f"http://{vm_ip}:5000/screen_size").json()

    def predict(self, instruction: str, obs: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        assert obs["screenshot"].startswith(b"\x89PNG")
        self.turn += 1
        if self.turn == 1:
            x, y = self.terminal()
            return {}, [self._click(x, y)]
        if self.turn == 2:
            if self.before_typing is not None:
                assert self.vm_ip is not None
                self.before_typing(self.vm_ip)
            return {}, [self._type(RENAME)]
        return {}, ["DONE"]

    def _click(self, x: int, y: int) -> Any:
        code = f"pyautogui.click({x}, {y})"
        if self.action_space == "claude_computer_use":
            return {
                "name": "computer",
                "input": {"action": "left_click", "coordinate": [x, y]},
                "id": "toolu_01",
                "action_type": "tool_use",
                "command": code + "\n",
            }
        return code

    def _type(self, text: str) -> Any:
        if self.action_space == "claude_computer_use":
            return {
                "name": "computer",
                "input": {"action": "type", "text": text + "\n"},
                "id": "toolu_02",
                "action_type": "tool_use",
                "command": f'pyautogui.typewrite("""{text}\n""", interval=0.01)\n',
            }
        if self.action_space == "autoglm_computer_use":
            return f"pyautogui.typewrite({text!r})\npyautogui.press('enter')"
        return f"pyautogui.typewrite({text!r}); pyautogui.press('enter')"
