"""Harbor trials run from a trial config, as the loops that drive Harbor's classes do
(SkyRL's Harbor generator, rLLM's Harbor runtime): ``TrialConfig.model_validate(config)``,
``Trial.create``, ``run``, and the reward read from ``verifier_result.rewards``. Runs in
Harbor's Python; prints one JSON line per trial.

    python trial_configs.py TRIALS_DIR TASK_DIR AGENT VERIFIER [TASK_DIR AGENT VERIFIER ...]

AGENT is ``oracle`` or an import path; VERIFIER is ``default`` (Harbor's own) or an import
path.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from harbor.models.trial.config import TrialConfig
from harbor.trial.trial import Trial


def trial_config(trials_dir: str, task: str, agent: str, verifier: str) -> dict[str, Any]:
    """A ``harbor_trial_config`` as SkyRL's recipe writes one, for one task."""
    config: dict[str, Any] = {
        "trials_dir": trials_dir,
        "task": {"path": task},
        "agent": {"name": "oracle"} if agent == "oracle" else {"import_path": agent},
        "environment": {"type": "docker", "delete": True},
    }
    if verifier != "default":
        config["verifier"] = {"import_path": verifier}
    return config


async def one(config: dict[str, Any]) -> dict[str, Any]:
    trial = await Trial.create(TrialConfig.model_validate(config))
    result = await trial.run()
    rewards = result.verifier_result.rewards if result.verifier_result else None
    info = result.exception_info
    return {
        "task": config["task"]["path"],
        "rewards": rewards,
        "exception_type": info.exception_type if info else None,
    }


async def main(trials_dir: str, specs: list[str]) -> None:
    # Side by side, as a training loop runs a batch of trials; printed in the order given.
    configs = [
        trial_config(trials_dir, *specs[start : start + 3]) for start in range(0, len(specs), 3)
    ]
    for result in await asyncio.gather(*(one(config) for config in configs)):
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
