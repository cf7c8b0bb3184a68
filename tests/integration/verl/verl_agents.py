"""What the verl tests put where a training run has a model: an agent loop that reports
the container its session drove, and a tokenizer that needs no download. Imported by
verl (through this folder on PYTHONPATH) in .venv-verl's Python.

`ContainerAgentLoop` stands in for an agent loop that drove a container with a model:
the test drove the container before the rollout (the oracle's solution, or the planter),
and the loop reports a few tokens and that container. The prompt's ``agent`` field names
the task, one container per session (``session_id`` picks it) and how the loop scores:

- ``hook``: it verifies the container itself (`verify_agent_loop_output`), so verl's
  reward function is not called for the session;
- ``hand-over``: it leaves ``reward_score`` unset and names the container in its
  ``extra_fields``, which verl's reward loop merges into the ``extra_info`` that
  cleanroom's `compute_score` verifies from.
"""

from __future__ import annotations

from typing import Any

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

from cleanroom.integrations.verl_reward import TARGET_KEY, verify_agent_loop_output

AGENT_NAME = "cleanroom_test_container_agent"
HOOK = "hook"
HAND_OVER = "hand-over"


class StubTokenizer:
    """Decodes token ids to their numbers: the reward functions here never read the text."""

    pad_token_id = 0
    eos_token = "</s>"

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        return " ".join(str(int(i)) for i in ids)


@register(AGENT_NAME)
class ContainerAgentLoop(AgentLoopBase):
    # verl builds every agent loop with the trainer's config, LLM client and tokenizer;
    # this one talks to no model, so it keeps none of them.
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        agent = kwargs["agent"]
        container = agent["containers"][kwargs["session_id"]]
        output = AgentLoopOutput(
            prompt_ids=[5, 6],
            response_ids=[7, 8, 9],
            response_mask=[1, 1, 1],
            num_turns=2,
            metrics=AgentLoopMetrics(),
        )
        if agent["scoring"] == HOOK:
            return await verify_agent_loop_output(output, agent["task_dir"], container)
        output.extra_fields[TARGET_KEY] = {"task_dir": agent["task_dir"], "container": container}
        return output
