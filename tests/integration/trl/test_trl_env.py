"""TRL's Harbor environments (``trl.experimental.harbor``, TRL 1.16) with cleanroom's
sealed verification, through TRL's own code, in .venv-trl (TRL, Harbor and torch need
Python 3.12; `make test-integrations` creates it) or the interpreter that
``CLEANROOM_TEST_TRL_PYTHON`` names.

The controls: TRL's stock ``HarborBashEnv`` runs Harbor's verifier in the agent's live
sandbox, so a reward planted by the agent and kept in place by a process it left running
scores 1 under TRL's default reward function, and an honest failure whose tests write no
reward raises (ending training). The sealed environment must score the planted
rollout 0 (the agent's tamper), still score the oracle 1 and an honest failure 0, and
return None for a sandbox the infrastructure lost, which the trainer leaves out of the
group: one real GRPOTrainer step shows the rewards, the advantages and cleanroom's
metrics as TRL logs them.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cleanroom.core.errors import ExtraNotInstalledError
from cleanroom.verifiers.container.runtime.docker import DockerRuntime

pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.integrations,
    pytest.mark.timeout(900),
    # One worker runs both of this module's runs, one after the other, each once.
    pytest.mark.xdist_group("trl"),
]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
TRL_PYTHON = Path(
    os.environ.get("CLEANROOM_TEST_TRL_PYTHON") or REPO / ".venv-trl" / "bin" / "python"
)
TASK = REPO / "examples" / "tasks" / "fix-median"
# The Harbor suite's planting agent lends the tests its reward rewriter.
HARBOR_TESTS = HERE.parent / "harbor"


def run_in_trl_venv(runtime: DockerRuntime, script: str, *args: Path) -> dict[str, Any]:
    """Run one of this folder's scripts in the TRL environment; the JSON it wrote to the
    file named by its first argument."""
    if not TRL_PYTHON.is_file():
        pytest.fail(
            f"no TRL environment ({TRL_PYTHON} is missing): run `make test-integrations`, "
            "which creates .venv-trl (TRL, Harbor and torch on Python 3.12+), or name its "
            "interpreter in CLEANROOM_TEST_TRL_PYTHON",
            pytrace=False,
        )
    env = {
        **os.environ,
        # cleanroom from this checkout's sources, whatever .venv-trl installed.
        "PYTHONPATH": os.pathsep.join([str(HERE), str(HARBOR_TESTS), str(REPO / "src")]),
        # What cleanroom starts to verify is removed with the test's runtime.
        "CLEANROOM_LABELS": ",".join(f"{k}={v}" for k, v in runtime.labels.items()),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    results = args[0]
    done = subprocess.run(
        [str(TRL_PYTHON), str(HERE / script), *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    data: dict[str, Any] = json.loads(results.read_text())
    return data


def dataset(root: Path) -> Path:
    """A dataset folder HarborSpec reads: fix-median alone."""
    folder = root / "dataset"
    shutil.copytree(TASK, folder / TASK.name)
    return folder


@pytest.fixture(scope="module")
def rollouts(runtime: DockerRuntime, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every scenario of trl_rollouts.py, run once, by name."""
    root = tmp_path_factory.mktemp("trl-rollouts")
    return run_in_trl_venv(runtime, "trl_rollouts.py", root / "results.json", dataset(root))


def scored(record: dict[str, Any]) -> Any:
    assert "raised" not in record, record.get("traceback")
    return record["reward"]


def test_a_planted_reward_kept_alive_scores_one_under_trl_default(
    rollouts: dict[str, Any],
) -> None:
    """The control: TRL's own environment and reward function are fooled."""
    assert scored(rollouts["trl/planted"]) == 1.0


def test_an_honest_failure_stops_training_under_trl_default(rollouts: dict[str, Any]) -> None:
    """The second control: fix-median's test.sh writes no reward when the tests fail,
    and TRL's default reward function raises Harbor's error, which ends training."""
    assert "RewardFileNotFoundError" in rollouts["trl/honest-failure"].get("raised", "")


def test_the_oracle_scores_one(rollouts: dict[str, Any]) -> None:
    record = rollouts["sealed/oracle"]
    assert scored(record) == 1.0
    assert record["outcome"]["outcome"] == "success"


def test_a_planted_reward_kept_alive_scores_zero_for_tamper(rollouts: dict[str, Any]) -> None:
    record = rollouts["sealed/planted"]
    assert scored(record) == 0.0
    assert record["outcome"]["reason"] == "tamper"
    assert record["outcome"]["caused_by"] == "agent"


def test_an_honest_failure_scores_zero(rollouts: dict[str, Any]) -> None:
    """Where TRL's default raises, cleanroom scores a plain 0."""
    record = rollouts["sealed/honest-failure"]
    assert scored(record) == 0.0
    assert record["outcome"]["outcome"] == "failure"
    assert record["outcome"]["caused_by"] is None


def test_a_sandbox_the_infrastructure_lost_is_excluded(rollouts: dict[str, Any]) -> None:
    record = rollouts["sealed/sandbox-removed"]
    assert scored(record) is None
    assert record["outcome"]["outcome"] == "invalid"
    assert record["outcome"]["caused_by"] == "infrastructure"


def test_no_sealed_sandbox_or_trial_folder_outlives_the_process(
    rollouts: dict[str, Any], runtime: DockerRuntime
) -> None:
    """Each reset stops the last rollout's sandbox and removes its trial folder; the last
    rollout's go when the process ends."""
    sealed = {name: r for name, r in rollouts.items() if name.startswith("sealed/")}
    left = {
        name: runtime.docker.client.containers.list(
            all=True, filters={"label": f"com.docker.compose.project={r['project']}"}
        )
        for name, r in sealed.items()
    }
    assert not any(left.values()), left
    assert not [r["trial_dir"] for r in sealed.values() if Path(r["trial_dir"]).exists()]


def test_a_script_that_ends_without_closing_leaves_no_sandbox(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    # cleanroom's module imported first, before anything else registers an exit hook.
    started = run_in_trl_venv(runtime, "trl_exit.py", tmp_path / "results.json", dataset(tmp_path))

    left = runtime.docker.client.containers.list(
        all=True, filters={"label": f"com.docker.compose.project={started['project']}"}
    )
    assert left == []
    networks = runtime.docker.client.networks.list(
        filters={"label": f"com.docker.compose.project={started['project']}"}
    )
    assert networks == []


@pytest.fixture(scope="module")
def grpo_step(runtime: DockerRuntime, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One GRPOTrainer step of trl_grpo_step.py: oracle, plant, oracle with its sandbox
    removed before the rewards."""
    root = tmp_path_factory.mktemp("trl-grpo")
    return run_in_trl_venv(
        runtime, "trl_grpo_step.py", root / "results.json", dataset(root), root / "out"
    )


def test_the_trainer_takes_one_reward_per_rollout_with_the_lost_one_excluded(
    grpo_step: dict[str, Any],
) -> None:
    """The environment's get_reward scores; sealed_reward leaves it that column, so
    each reward counts once; the lost rollout is NaN and gets no advantage."""
    assert grpo_step["removed"], "the third rollout's sandbox was not removed"
    columns = grpo_step["reward_columns"]
    assert columns["SealedHarborBashEnv"] == [1.0, 0.0, None]
    assert columns["sealed_reward"] == [None, None, None]
    advantages = grpo_step["advantages"]
    assert advantages[0] > 0 > advantages[1]
    assert advantages[2] == 0.0
    logged = grpo_step["log_history"][0]
    assert logged["reward"] == 0.5  # the mean of the scored two
    assert grpo_step["weights_changed"]


def test_the_trainer_logs_each_rollouts_reason_and_the_batch_tally(
    grpo_step: dict[str, Any],
) -> None:
    extra = grpo_step["extra"]
    assert extra["cleanroom_outcome"] == ["success", "failure", "invalid"]
    assert extra["cleanroom_reason"] == [None, "tamper", "verifier_unavailable"]
    assert extra["cleanroom_caused_by"] == [None, "agent", "infrastructure"]
    logged = grpo_step["log_history"][0]
    assert logged["cleanroom/agent_caused/tamper"] == 1.0
    assert logged["cleanroom/excluded/verifier_unavailable"] == 1.0
    assert logged["cleanroom/scored"] == 2.0
    # The trainer averages a metric as a float32 tensor.
    assert logged["cleanroom/excluded_fraction"] == pytest.approx(1 / 3, rel=1e-6)


def test_only_the_harness_tool_is_offered_to_the_model(grpo_step: dict[str, Any]) -> None:
    assert grpo_step["tools"] == ["bash"]


def test_without_trl_the_adapter_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "trl", None)  # what an import of a missing package meets
    monkeypatch.delitem(sys.modules, "cleanroom.integrations.trl_env", raising=False)
    with pytest.raises(ExtraNotInstalledError, match=r"pip install 'cleanroom\[trl\]'"):
        importlib.import_module("cleanroom.integrations.trl_env")
