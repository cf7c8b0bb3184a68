"""verl's reward function and agent-loop hook with cleanroom's sealed verification.

As verl's custom reward function (``cleanroom[verl]``)::

    reward.custom_reward_function.path=pkg://cleanroom.integrations.verl_reward
    reward.custom_reward_function.name=compute_score

Each sample says where its agent acted, in ``extra_info`` (a dataset column, or an agent
loop's ``extra_fields``, which verl's reward loop merges into it)::

    extra_info["cleanroom"] = {"task_dir": "tasks/fix-median", "container": "rollout-17"}

and may add what `verify_container` takes besides: ``mode``, ``step``, ``budget_s``,
``engine``, ``harness_dirs``. An agent loop that verified already hands its outcome over
instead, as `Outcome.to_json` wrote it (a dict or its JSON text), under
``extra_info["cleanroom_outcome"]``: nothing is verified twice.

An agent loop that drove a container verifies it at its end with
`verify_agent_loop_output` (or records an outcome it got another way with
`record_outcome`): the output's ``reward_score`` is filled and verl does not call the
reward function for it. Both paths go through one mapping, `reward_of`:

- a valid outcome is a dict with the same keys for every sample: ``score`` (the agent's
  own 0 for tampering included) and the sample's counts (`RewardTally.as_metrics` of a
  one-outcome tally), so that the sum of a column over a batch is that batch's count;
- an invalid outcome (the infrastructure failed) raises `InvalidOutcomeError`. verl's v1
  trainer (the default) fails that session and trains its group without it: excluded,
  never a 0. The v0 trainer has no way to leave a sample out, so there the raise stops
  the step: by design, rather than a 0 that would teach the policy a fault.

verl turns None into "not computed yet" and NaN into a poisoned group mean; a raise is
its only "no reward", so neither is ever returned. The dict has no ``acc`` key either:
verl's validation counts a missing session as 0 in ``acc``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from cleanroom.core.errors import ExtraNotInstalledError
from cleanroom.core.outcomes import Outcome
from cleanroom.core.tally import DEFAULT_PREFIX, tally
from cleanroom.integrations.container import (
    ContainerOptions,
    ContainerVerification,
    verify_container_async,
    verify_requested,
)
from cleanroom.integrations.rewards import rewards_of

if TYPE_CHECKING:
    from verl.experimental.agent_loop.agent_loop import AgentLoopOutput

# Where a sample's ``extra_info`` says which container to verify against which task.
TARGET_KEY = "cleanroom"
# Where an outcome already made travels: `extra_info` for the reward function, the agent
# loop output's ``extra_fields`` (verl merges these into ``extra_info``).
OUTCOME_KEY = "cleanroom_outcome"
# The field of ``extra_fields`` verl reads a precomputed reward's extra columns from.
REWARD_EXTRA_INFO = "reward_extra_info"

__all__ = [
    "OUTCOME_KEY",
    "TARGET_KEY",
    "compute_score",
    "record_outcome",
    "reward_of",
    "verify_agent_loop_output",
]


def reward_of(outcome: Outcome, prefix: str = DEFAULT_PREFIX) -> dict[str, float]:
    """What verl records for ``outcome``: ``score`` and the sample's counts under
    ``prefix`` (``cleanroom/success``, ``cleanroom/agent_caused/tamper``...), every
    reason the agent can cause always present, so every sample has the same keys (verl
    builds a batch's columns from its first sample's keys). `InvalidOutcomeError` when
    the outcome must not be scored.

    The excluded counts and the fractions of `RewardTally.as_metrics` are left out: an
    excluded sample has no row in verl's batch, so those columns would read 0 on every
    row whatever was excluded, and a count column's mean already is its fraction."""
    score = rewards_of(outcome)["reward"]
    excluded = f"{prefix}/excluded"
    counts = {
        key: value
        for key, value in tally([outcome]).as_metrics(prefix).items()
        if not key.startswith(excluded) and not key.endswith("_fraction")
    }
    return {"score": score, **counts}


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """verl's custom reward function: the sample's outcome as `reward_of` maps it,
    verified from ``extra_info["cleanroom"]`` or taken from the outcome an agent loop
    handed over in ``extra_info["cleanroom_outcome"]``.

    The response text, the data source and the ground truth are not read: the reward is
    what the task's tests say about the container's state, not what the model wrote.
    Raises `InvalidOutcomeError` for an invalid outcome (see the module's docstring) and
    `ValueError` for a sample that says neither where to verify nor what was verified.
    """
    return reward_of(_outcome_for(extra_info or {}))


async def verify_agent_loop_output(
    output: AgentLoopOutput,
    task_dir: str | os.PathLike[str],
    container: str,
    **options: Unpack[ContainerOptions],
) -> AgentLoopOutput:
    """The hook an agent loop calls at the end of its ``run`` for the ``container`` it
    drove: verifies it against the task in ``task_dir`` (`verify_container_async`, which
    takes the ``options``) and records the outcome on ``output`` (`record_outcome`).
    Raises `InvalidOutcomeError` for an invalid outcome: let it out of ``run``, and
    verl's v1 trainer leaves the session out of its group."""
    outcome = await verify_container_async(task_dir, container, **options)
    return record_outcome(output, outcome)


def record_outcome(output: AgentLoopOutput, outcome: Outcome) -> AgentLoopOutput:
    """``output`` with ``outcome`` recorded as verl's reward loop would have recorded it
    from `compute_score`: ``reward_score`` and ``extra_fields["reward_extra_info"]`` from
    `reward_of`, and the outcome's JSON in ``extra_fields["cleanroom_outcome"]``, for
    logs and for a reward function that reads it. `InvalidOutcomeError` when invalid.

    A preset ``reward_score`` is verl's sign that the agent loop scored the sample
    itself, so the reward function is not called for it; the extra columns keep such a
    sample's row the same shape as one the reward function scored."""
    output_type = _agent_loop_output_type()
    if not isinstance(output, output_type):
        raise TypeError(f"takes verl's {output_type.__name__}, not {type(output).__name__}")
    output.extra_fields[OUTCOME_KEY] = outcome.to_json()
    reward = reward_of(outcome)
    output.reward_score = reward["score"]
    output.extra_fields[REWARD_EXTRA_INFO] = reward
    return output


def _outcome_for(extra_info: Mapping[str, Any]) -> Outcome:
    """The outcome a sample's ``extra_info`` hands over, else the one its container gets."""
    handed = extra_info.get(OUTCOME_KEY)
    if handed is not None:
        return Outcome.from_json(json.loads(handed) if isinstance(handed, str) else handed)
    target = extra_info.get(TARGET_KEY)
    if not isinstance(target, Mapping) or "task_dir" not in target or "container" not in target:
        raise ValueError(
            f'cleanroom\'s compute_score needs extra_info["{TARGET_KEY}"] = '
            '{"task_dir": ..., "container": ...} '
            f'or an outcome in extra_info["{OUTCOME_KEY}"]; got keys {sorted(extra_info)}'
        )
    given = {k: v for k, v in target.items() if k in ContainerOptions.__annotations__}
    return verify_requested(
        ContainerVerification(Path(target["task_dir"]), target["container"], **given)
    )


def _agent_loop_output_type() -> type[AgentLoopOutput]:
    try:
        from verl.experimental.agent_loop.agent_loop import AgentLoopOutput
    except ImportError as exc:
        raise ExtraNotInstalledError(
            "the verl agent-loop hook", "verl", exc.name or "verl"
        ) from exc
    return AgentLoopOutput
