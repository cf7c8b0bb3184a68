"""A process that imports cleanroom's TRL environments first, starts one sandbox and
exits without closing it, as a training script ends: the environment is still held when
the exit handlers run (as a trainer in a script's global holds its environments), so only
the exit hook can stop it, and it must run before the handler that deletes Harbor's
temporary compose files (without it the sandbox and its network stay). Run in .venv-trl:

    python trl_exit.py RESULTS_JSON DATASET_DIR

It records the sandbox's Compose project, for the test to find it gone after the exit.
"""

from __future__ import annotations

import json
import os
import sys

# First: this module's exit hook is then the first registered of the process.
from cleanroom.integrations.trl_env import SealedHarborBashEnv  # isort: skip

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from trl.experimental.harbor import HarborSpec

from cleanroom.integrations.environment import compose_project_name

# Held until the process ends, as a trainer in a script's global holds its environments.
KEPT: list[SealedHarborBashEnv] = []


def main(results_path: str, dataset: str) -> None:
    spec = HarborSpec(dataset, agent=SealedHarborBashEnv)
    env = SealedHarborBashEnv()
    KEPT.append(env)
    env.reset(**dict(spec.train_dataset[0]))
    with open(results_path, "w") as out:
        json.dump({"project": compose_project_name(env._env.session_id)}, out)
    # No close_environments(): the process ends here, with the sandbox up.


if __name__ == "__main__":
    main(*sys.argv[1:])
