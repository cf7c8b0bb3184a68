"""verl 0.9.1's own reward and agent-loop code, run on CPU without Ray or a model, for
test_verl_reward.py, which launches it in .venv-verl's Python:

    python verl_driver.py REQUEST.json RESULT.json

The request's ``run`` picks what runs:

- ``reward-manager``: verl's reward manager as a training run loads it
  (``load_reward_manager`` from a config naming ``function`` as the custom reward
  function), scoring each of ``samples`` (their ``extra_info``) with ``run_single``, as
  verl's reward loop does for every sample, all at once on the manager's event loop;
- ``v1-group``: one prompt through the v1 trainer's rollout code: its group of sessions
  (one per container) run by ``AgentLoopWorkerTQ._run_prompt`` with verl's agent-loop
  post-processing and ``_compute_score`` behind it, a reward-loop worker with cleanroom's
  `compute_score`, then the batch the sync ``ReplayBuffer`` samples from what the
  sessions stored.

What stands in: TransferQueue is an in-memory table of the same calls, Ray's actor handle
for the reward-loop worker is a call through a pickled copy of the request (as Ray's
object store makes one), and the tokenizer and the agent loop are `verl_agents`'.
"""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
import verl.trainer.ppo.v1.agent_loop_tq as agent_loop_tq
import verl.trainer.ppo.v1.replay_buffer as replay_buffer
from omegaconf import DictConfig, OmegaConf
from verl import DataProto
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase
from verl.trainer.ppo.reward import load_reward_manager
from verl_agents import AGENT_NAME, StubTokenizer

from cleanroom.core.errors import InvalidOutcomeError

PARTITION = "train"
PROMPT_UID = "p"
DATA_SOURCE = "cleanroom-fix-median"


def reward_config(function: str) -> DictConfig:
    """The reward section of verl's trainer config with ``function`` (a ``pkg://`` module
    or a file) as the custom reward function."""
    return OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": function,
                    "name": "compute_score",
                    "reward_kwargs": {},
                },
                "reward_manager": {"source": "register", "name": "naive"},
                "reward_model": {"enable": False},
            }
        }
    )


def one_sample(extra_info: dict[str, Any]) -> DataProto:
    """A one-sample batch as verl's reward loop gets it."""
    prompts = torch.tensor([[0, 5, 6]])
    responses = torch.tensor([[7, 8, 9, 0]])
    return DataProto.from_dict(
        tensors={
            "prompts": prompts,
            "responses": responses,
            "attention_mask": torch.tensor([[0, 1, 1, 1, 1, 1, 0]]),
            "input_ids": torch.cat([prompts, responses], 1),
        },
        non_tensors={
            "data_source": np.array([DATA_SOURCE], dtype=object),
            "reward_model": np.array([{"ground_truth": ""}], dtype=object),
            "extra_info": np.array([extra_info], dtype=object),
        },
    )


def raised(exc: BaseException) -> dict[str, Any]:
    """What a test needs to know of an exception: its class, message and, for an invalid
    outcome, the outcome."""
    found: dict[str, Any] = {"raised": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, InvalidOutcomeError):
        found["outcome"] = exc.outcome.to_json()
    return found


def run_reward_manager(request: dict[str, Any]) -> dict[str, Any]:
    manager: RewardManagerBase = load_reward_manager(
        reward_config(request["function"]), StubTokenizer()
    )

    async def score(extra_info: dict[str, Any]) -> dict[str, Any]:
        try:
            result: dict[str, Any] = await manager.run_single(one_sample(extra_info))
        except Exception as exc:
            return raised(exc)
        return result

    async def score_all() -> list[dict[str, Any]]:
        return await asyncio.gather(*(score(s) for s in request["samples"]))

    # The manager's executor calls are bound to the loop it was built on.
    samples = manager.loop.run_until_complete(score_all())
    return {"manager": type(manager).__name__, "samples": samples}


class InMemoryTransferQueue:
    """TransferQueue's key-value calls that the v1 rollout and replay buffer make, on a
    table in memory: tags merge as TransferQueue's do, fields are kept for the test."""

    def __init__(self) -> None:
        self.tags: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        self.fields: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)

    def kv_put(self, key: str, partition_id: str, tag: dict[str, Any]) -> None:
        self.tags[partition_id].setdefault(key, {}).update(tag)

    async def async_kv_put(self, key: str, partition_id: str, tag: dict[str, Any]) -> None:
        self.kv_put(key, partition_id, tag)

    async def async_kv_batch_put(
        self, keys: list[str], fields: Any, tags: list[dict[str, Any]], partition_id: str
    ) -> None:
        # A TensorDict iterates over its rows; its field names are its keys().
        names = list(fields.keys())
        for i, (key, tag) in enumerate(zip(keys, tags, strict=True)):
            self.kv_put(key, partition_id, tag)
            self.fields[partition_id][key] = {name: fields[name][i] for name in names}

    def kv_list(self) -> dict[str, dict[str, dict[str, Any]]]:
        return {p: {k: dict(t) for k, t in items.items()} for p, items in self.tags.items()}

    def kv_clear(self, partition_id: str, keys: list[str]) -> None:
        for key in keys:
            self.tags[partition_id].pop(key, None)


class RewardLoopHandle:
    """Ray's handle of a reward-loop worker: ``handle.compute_score.remote(data)``."""

    def __init__(self, worker: RewardLoopWorker) -> None:
        self.compute_score = self
        self.worker = worker

    def remote(self, data: DataProto) -> Any:
        return self.worker.compute_score(pickle.loads(pickle.dumps(data)))


def reward_loop_worker() -> RewardLoopWorker:
    """A reward-loop worker as Ray builds it, less the tokenizer download."""
    config = reward_config("pkg://cleanroom.integrations.verl_reward")
    worker = object.__new__(RewardLoopWorker)
    worker.config = config
    worker.reward_router_address = None
    worker.reward_manager = load_reward_manager(config, StubTokenizer())
    worker.loop = worker.reward_manager.loop
    return worker


def agent_loop_worker(sessions: int, reward_worker: RewardLoopWorker) -> Any:
    """The v1 agent-loop worker (the class under Ray's actor wrapper) with what its
    ``__init__`` would load from a model: nothing, since the agent loop calls none."""
    worker = object.__new__(agent_loop_tq.AgentLoopWorkerTQ.__ray_actor_class__)
    worker.config = OmegaConf.create(
        {"actor_rollout_ref": {"rollout": {"n": sessions, "val_kwargs": {"n": 1}}}, "data": {}}
    )
    worker.reward_loop_worker_handles = [RewardLoopHandle(reward_worker)]
    worker.llm_client = None
    worker.tokenizer = StubTokenizer()
    worker.processor = None
    worker.mm_processor_kwargs = {}
    worker.hf_model_type = None
    worker.dataset_cls = None
    worker.tools = []
    worker.distillation_enabled = False
    worker.background_tasks = set()
    return worker


class SessionErrors(logging.Handler):
    """The exceptions ``_run_prompt`` logs for its failed sessions."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.found.append(raised(record.exc_info[1]))


def run_v1_group(request: dict[str, Any]) -> dict[str, Any]:
    store = InMemoryTransferQueue()
    agent_loop_tq.tq = store
    replay_buffer.tq = store
    errors = SessionErrors()
    agent_loop_tq.logger.addHandler(errors)
    containers = request["containers"]
    reward_worker = reward_loop_worker()
    worker = agent_loop_worker(len(containers), reward_worker)
    prompt = {
        "uid": PROMPT_UID,
        "index": 0,
        "global_steps": 1,
        "agent_name": AGENT_NAME,
        "raw_prompt": [{"role": "user", "content": "fix the median"}],
        "data_source": DATA_SOURCE,
        "reward_model": {"ground_truth": ""},
        "agent": {
            "task_dir": request["task_dir"],
            "containers": containers,
            "scoring": request["scoring"],
        },
    }
    trajectory = {"step": 1, "sample_index": 0, "rollout_n": 0, "validate": False}
    # The trainer registers each prompt before its sessions start.
    store.kv_put(PROMPT_UID, PARTITION, {"is_prompt": True, "status": "pending", "global_steps": 1})
    reward_worker.loop.run_until_complete(worker._run_prompt(prompt, {}, trajectory))
    status = store.tags[PARTITION][PROMPT_UID]["status"]
    buffer = replay_buffer.ReplayBuffer(
        trainer_mode="sync",
        trainer_config=OmegaConf.create({}),
        max_off_policy_threshold=None,
        max_off_policy_strategy="drop",
        sampler_kwargs=OmegaConf.create({}),
        poll_interval=0.01,
    )
    batch, metrics = buffer.sample(global_steps=1, partition_id=PARTITION, batch_size=1)
    rows = {}
    for key in batch.keys:
        fields = store.fields[PARTITION][key]
        extra = fields["extra_fields"]
        extra = getattr(extra, "data", extra)
        rows[key] = {
            # The reward sits on the last response token (verl's rm_scores).
            "rm_scores": [float(x) for x in fields["rm_scores"]],
            "reward_extra_info": extra.get("reward_extra_info"),
            "outcome": extra.get("cleanroom_outcome"),
        }
    return {
        "group_status": status,
        "sampled": list(batch.keys),
        "rows": rows,
        "metrics": metrics,
        "session_errors": errors.found,
    }


RUNS = {"reward-manager": run_reward_manager, "v1-group": run_v1_group}


def main() -> None:
    request = json.loads(Path(sys.argv[1]).read_text())
    result = RUNS[request["run"]](request)
    Path(sys.argv[2]).write_text(json.dumps(result, default=float))


if __name__ == "__main__":
    main()
