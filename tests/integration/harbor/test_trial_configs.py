"""SealedVerifier in loops that drive Harbor's trials themselves (SkyRL's Harbor generator,
rLLM's Harbor runtime), through Harbor's own ``Trial`` from a trial config with
``verifier.import_path`` set, as those loops build it (docs: Rewards in your loop, SkyRL
and rLLM).

Neither loop's Harbor code is on PyPI (SkyRL ships it as an example of its repository,
rLLM installs from git), so this runs the Harbor calls they make, in Harbor 0.26: the
oracle's 1, the planting agent's 1 under Harbor's default verifier (the naive baseline)
and its 0 under SealedVerifier, and an invalid outcome as the trial's exception with no
reward (what both loops retry and then mask). The outcomes SealedVerifier recorded in the
trial folders are then counted (`harbor_trials.tally_trials`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cleanroom.integrations.harbor_trials import tally_trials
from cleanroom.verifiers.container.runtime.docker import DockerRuntime

from .test_harbor_run import HARBOR, PLANTING_AGENT, SEALED, TASK, harbor_env

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(600)]

RUNNER = Path(__file__).with_name("trial_configs.py")


def test_trials_from_a_config_score_forging_zero_and_exclude_invalid(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    junk = tmp_path / "junk-reward"
    shutil.copytree(TASK, junk)
    (junk / "tests" / "test.sh").write_text("#!/bin/bash\necho nan > /logs/verifier/reward.txt\n")
    trials = tmp_path / "trials"
    specs = [
        (TASK, "oracle", SEALED),
        (TASK, PLANTING_AGENT, "default"),
        (TASK, PLANTING_AGENT, SEALED),
        (junk, "oracle", SEALED),
    ]
    argv = [str(HARBOR.with_name("python")), str(RUNNER), str(trials)]
    for task, agent, verifier in specs:
        argv += [str(task), agent, verifier]
    done = subprocess.run(
        argv, env=harbor_env(runtime), capture_output=True, text=True, timeout=540
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    oracle, baseline, planted, invalid = [json.loads(line) for line in done.stdout.splitlines()]
    assert oracle["rewards"] == {"reward": 1.0}
    assert baseline["rewards"] == {"reward": 1.0}  # Harbor's default is fooled
    assert planted["rewards"] == {"reward": 0.0}
    assert invalid["rewards"] is None
    assert invalid["exception_type"] == "InvalidOutcomeError"
    metrics = tally_trials(trials).as_metrics()
    assert metrics["cleanroom/success"] == 1
    assert metrics["cleanroom/agent_caused/tamper"] == 1
    assert metrics["cleanroom/excluded/bad_reward"] == 1
