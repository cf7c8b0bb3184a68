"""Rollouts of fix-median through TRL's own Harbor environments, driven as GRPOTrainer
drives them, without a model: ``reset(**row)`` with a row of HarborSpec's dataset, the
policy's ``bash`` calls, then the reward the trainer reads. Run in .venv-trl:

    python trl_rollouts.py RESULTS_JSON DATASET_DIR

TRL's ``HarborBashEnv`` is scored by TRL's default reward function
(``HarborSpec.reward_funcs``); the sealed one by its ``get_reward``, as the trainer adds
it. One instance of each class serves every rollout, as the trainer's pool reuses them.
Each scenario's record: the reward (or what was raised), cleanroom's outcome, and the
sandbox's Compose project and trial folder, for the test to find them gone at exit.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from trl.experimental.harbor import HarborBashEnv, HarborSpec
from trl_scripted import NOTHING, ORACLE, PLANT, remove_sandbox

from cleanroom.integrations.environment import compose_project_name
from cleanroom.integrations.trl_env import SealedHarborBashEnv, outcome_of

# name: (sealed?, the policy's bash commands, what the infrastructure does before the reward)
SCENARIOS: dict[str, tuple[bool, list[str], Callable[[Any], Any] | None]] = {
    "trl/planted": (False, [PLANT], None),
    "trl/honest-failure": (False, [NOTHING], None),
    "sealed/oracle": (True, [ORACLE], None),
    "sealed/honest-failure": (True, [NOTHING], None),
    "sealed/planted": (True, [PLANT], None),
    "sealed/sandbox-removed": (True, [ORACLE], remove_sandbox),
}


def rollout(
    env: Any,
    spec: HarborSpec,
    row: dict[str, Any],
    commands: list[str],
    fault: Callable[[Any], Any] | None,
) -> dict[str, Any]:
    env.reset(**row)
    record: dict[str, Any] = {
        "project": compose_project_name(env._env.session_id),
        "trial_dir": str(env._paths.trial_dir),
        "tool_output": [env.bash(command=command)[-500:] for command in commands],
    }
    if fault is not None:
        fault(env)
    try:
        if isinstance(env, SealedHarborBashEnv):
            record["reward"] = env.get_reward()
            outcome = outcome_of(env)
            record["outcome"] = outcome.to_json() if outcome is not None else None
        else:
            record["reward"] = spec.reward_funcs(environments=[env])[0]
    except Exception as exc:  # the record says what TRL's reward path raised
        record["raised"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc()[-3000:]
    return record


def main(results_path: str, dataset: str) -> None:
    spec = HarborSpec(dataset, agent=SealedHarborBashEnv)
    row = dict(spec.train_dataset[0])
    envs = {True: SealedHarborBashEnv(), False: HarborBashEnv()}
    results = {
        name: rollout(envs[sealed], spec, row, commands, fault)
        for name, (sealed, commands, fault) in SCENARIOS.items()
    }
    # TRL's own environment keeps its last sandbox until it is collected, and every
    # trial folder; the sealed one's are gone when the process ends (trl_env).
    envs[False]._run(envs[False]._stop())
    for name, record in results.items():
        if not SCENARIOS[name][0]:
            shutil.rmtree(record["trial_dir"], ignore_errors=True)
    Path(results_path).write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
