"""The control: a custom reward function for verl that trusts the reward file the rollout's
container holds, as many setups do (loaded by path as ``reward.custom_reward_function``).

A planter's leftover process keeps 1 in that file, so this function scores 1 a task
that was never done: the attack cleanroom's `compute_score` must score 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import docker

REWARD_FILE = "/logs/verifier/reward.txt"


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> float:
    container = docker.from_env().containers.get((extra_info or {})["cleanroom"]["container"])
    done = container.exec_run(["cat", REWARD_FILE])
    return float(done.output.decode().strip()) if done.exit_code == 0 else 0.0
