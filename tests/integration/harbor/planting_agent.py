"""A Harbor agent of the tests' own (``--agent-import-path planting_agent:PlantingAgent``,
with this folder on PYTHONPATH): it does not do the task, it plants a reward of 1 and
leaves a process rewriting it every 50 ms, so that a verifier that removes the reward
before its tests and reads it after them still reads 1. Runs in Harbor's Python."""

from __future__ import annotations

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

REWRITER = (
    "nohup setsid sh -c 'while :; do echo 1 > /logs/verifier/reward.txt; sleep 0.05; done' "
    ">/dev/null 2>&1 < /dev/null &"
)


class PlantingAgent(BaseAgent):
    @staticmethod
    def name() -> str:
        return "cleanroom-test-planting-agent"

    def version(self) -> str:
        return "1"

    async def setup(self, environment: BaseEnvironment) -> None:
        return None

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        result = await environment.exec(command=f"echo 1 > /logs/verifier/reward.txt; {REWRITER}")
        if result.return_code != 0:
            raise RuntimeError(f"planting failed: {result.stdout} {result.stderr}")
