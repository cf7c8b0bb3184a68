"""Harbor agents of the tests' own (``--agent-import-path harbor_agents:PlantingAgent``,
with this folder on PYTHONPATH), for the fix-median task; they run in Harbor's Python.

`PlantingAgent` does not do the task: it plants a reward of 1 and leaves a process
rewriting it every 50 ms, so that a verifier that removes the reward before its tests and
reads it after them still reads 1. Each rewrite opens the file without truncating it
(``1<>``), so a reader never catches it empty (which Harbor reports as an error instead
of the forged 1) and it is never missing, not even for a moment, where /logs/verifier
is a folder bound from the host (a rename from elsewhere would be a copy there).
`HangingAgent` leaves a module under test that never returns, so the tests run out of
time on its state."""

from __future__ import annotations

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

# A process left behind that keeps the planted reward in place. It ignores the hangup and
# the termination a pty's end sends (podman-compose's exec gives the agent's commands a
# tty, and a plain background process dies with it).
REWRITER = (
    "(trap '' HUP INT TERM; setsid sh -c 'trap \"\" HUP INT TERM; "
    "while :; do printf 1 1<> /logs/verifier/reward.txt; sleep 0.05; done' "
    ">/dev/null 2>&1 < /dev/null &); sleep 0.2"
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


class HangingAgent(PlantingAgent):
    @staticmethod
    def name() -> str:
        return "cleanroom-test-hanging-agent"

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        hang = "printf 'import time\\ntime.sleep(10**6)\\n' > /app/stats.py"
        result = await environment.exec(command=hang)
        if result.return_code != 0:
            raise RuntimeError(f"writing stats.py failed: {result.stdout} {result.stderr}")


class CatalogueAgent(PlantingAgent):
    """Runs one attack of cleanroom's red-team catalogue as the agent
    (``--agent-kwarg attack=ID``), as the red team runs it outside Harbor."""

    def __init__(self, *args: object, attack: str = "", **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        from cleanroom.redteam.catalogue import by_id

        self.attack = by_id(attack)

    @staticmethod
    def name() -> str:
        return "cleanroom-test-catalogue-agent"

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        result = await environment.exec(command=self.attack.script)
        if result.return_code != 0:
            raise RuntimeError(f"{self.attack.id} failed: {result.stdout} {result.stderr}")


class WrongAnswerAgent(PlantingAgent):
    """Leaves a result that is not the answer: its trial is graded 0."""

    @staticmethod
    def name() -> str:
        return "cleanroom-test-wrong-answer-agent"

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        result = await environment.exec(command="echo wrong > /app/result.txt")
        if result.return_code != 0:
            raise RuntimeError(f"writing the result failed: {result.stdout} {result.stderr}")
