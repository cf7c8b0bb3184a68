"""Real verifiers rollouts of one Harbor task, with a scripted model: run by
test_verifiers_task.py in the verifiers environment (Python 3.12, ``verifiers[harbor]``).

    python verifiers_rollouts.py TASK_DIR OUT_JSON

No LLM: `FakeModel` is an OpenAI-compatible server on 127.0.0.1 answering
``/v1/chat/completions`` (streamed, as verifiers' bash harness asks) with one scripted
``bash`` tool call, then "Done.". The scenario is the model's name. Everything else is
verifiers' own: its Harbor env, agent and rollout, the bash harness inside the container,
the interception server relaying the harness's calls here, and its docker runtime.

Each rollout is a (grader, scenario) pair, written to OUT_JSON with what the trace
holds, and the batch tally of the sealed task's rollouts (`tally_of`) beside them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from aiohttp import web
from verifiers.v1.clients import EvalClientConfig, ModelContext
from verifiers.v1.env import RunSlot
from verifiers.v1.episode import Episode
from verifiers.v1.runtimes import Runtime
from verifiers.v1.tasksets.harbor import HarborTask
from verifiers.v1.trace import Trace

from cleanroom.integrations.verifiers_task import (
    SealedHarborTask,
    sealed_harbor_env,
    tally_of,
)
from cleanroom.verifiers.container.runtime.docker import DockerRuntime

# Each line a simple command: a detached loop inside a backgrounded and-list would keep
# the tool's stdout open, and the bash tool would wait for it until the agent timeout.
PLANTER = (
    "mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt\n"
    "setsid sh -c 'while :; do mkdir -p /logs/verifier; "
    "echo 1 > /logs/verifier/reward.txt; sleep 0.05; done' >/dev/null 2>&1 </dev/null &\n"
    "echo planted"
)
ORACLE = "oracle"
PLANTING = "planter"
API_KEY_VAR = "VF_FAKE_API_KEY"
BATCH = ("sealed", "container-removed")
AGENT = {
    "runtime": {"type": "docker"},
    "harness": {"id": "bash", "compaction": None, "edit": False},
    "max_turns": 4,
    # The scoring timeout is the budget the sealed verification is fitted into.
    "timeout": {"setup": 900, "rollout": 300, "scoring": 300},
}
# Too short for any verification of fix-median once cleanroom's reserve is kept.
SHORT_SCORING_S = 12


class ContainerRemovedTask(SealedHarborTask):
    """The sealed task, with the rollout's container removed after the agent's turn and
    before scoring, as a lost node or a daemon restart would: the infrastructure's
    fault, which no agent can cause from inside its container."""

    async def finalize(
        self, trace: Trace, runtime: Runtime, sidecars: dict[str, Runtime] | None = None
    ) -> None:
        await super().finalize(trace, runtime, sidecars)
        await asyncio.to_thread(DockerRuntime.connect().containers.remove, runtime.info.id)


class FakeModel:
    """Scripted chat completions: the first turn runs the scenario's command through
    the ``bash`` tool; once a tool result is back, the model says it is done."""

    def __init__(self, commands: dict[str, str]) -> None:
        self.commands = commands

    def reply(self, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        command = self.commands.get(body.get("model", ""))
        answered = any(m.get("role") == "tool" for m in body.get("messages", []))
        if command is None or answered:
            return {"role": "assistant", "content": "Done."}, "stop"
        call = {
            "id": f"call_{uuid.uuid4().hex[:8]}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        message, finish = self.reply(body)
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "created": int(time.time()),
            "model": body.get("model"),
        }
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return web.json_response(
                {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
            )
        delta = dict(message)
        if delta.get("tool_calls"):
            delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(delta["tool_calls"])]
        chunk = {**base, "object": "chat.completion.chunk"}
        chunks = [
            {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**chunk, "choices": [], "usage": usage},
        ]
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for each in chunks:
            await response.write(f"data: {json.dumps(each)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def serve(self) -> tuple[web.AppRunner, str]:
        """Start on a free port of 127.0.0.1; the runner (to clean up) and base URL."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        return runner, f"http://127.0.0.1:{port}/v1"


def summary(grader: str, scenario: str, episode: Episode) -> dict[str, Any]:
    """What the tests read of one rollout's trace."""
    trace = episode.traces[0]
    return {
        "grader": grader,
        "scenario": scenario,
        "ok": trace.ok,
        "rewards": {k: None if v is None else v.score for k, v in trace.rewards.items()},
        "reward": trace.reward,
        "metrics": trace.metrics,
        "errors": [{"type": e.type, "message": e.message} for e in trace.errors],
        "cleanroom": trace.info.get("cleanroom"),
        "tool_outputs": [str(m.content)[:300] for m in trace.tool_messages],
    }


async def run(task_dir: Path) -> dict[str, Any]:
    """The five rollouts side by side (the fake model answers each by its name), and
    the sealed batch's tally counted from the episodes and from their saved records."""
    os.environ.setdefault("VF_RUN_ID", f"cleanroom-test-{uuid.uuid4().hex[:8]}")
    os.environ.setdefault(API_KEY_VAR, "not-a-real-key")
    solution = (task_dir / "solution" / "solve.sh").read_text()
    model = FakeModel({ORACLE: solution, PLANTING: PLANTER})
    runner, base_url = await model.serve()
    env = sealed_harbor_env({"path": str(task_dir)}, agent=AGENT)
    short_timeout = {**AGENT["timeout"], "scoring": SHORT_SCORING_S}
    hurried = sealed_harbor_env({"path": str(task_dir)}, agent={**AGENT, "timeout": short_timeout})
    (sealed,) = list(env.taskset)
    # verifiers' own default task on the same data: the control that must be fooled.
    default = HarborTask(sealed.data, sealed.config)
    removed = ContainerRemovedTask(sealed.data, sealed.config)
    plan = [
        ("sealed", ORACLE, sealed, env),
        ("default", PLANTING, default, env),
        ("sealed", PLANTING, sealed, env),
        ("container-removed", ORACLE, removed, env),
        ("short-scoring-timeout", ORACLE, sealed, hurried),
    ]
    try:
        async with env.serving(), hurried.serving():
            episodes = await asyncio.gather(
                *(
                    on.run_slot(
                        RunSlot(task),
                        ModelContext(
                            model=scenario,
                            client=EvalClientConfig(base_url=base_url, api_key_var=API_KEY_VAR),
                        ),
                    )
                    for _, scenario, task, on in plan
                )
            )
    finally:
        await runner.cleanup()
    # The batch the tally counts: the sealed task's three rollouts under the same config.
    batch = [e for (grader, *_), e in zip(plan, episodes, strict=True) if grader in BATCH]
    saved = [json.loads(e.model_dump_json()) for e in batch]
    return {
        "rollouts": [
            summary(grader, scenario, episode)
            for (grader, scenario, *_), episode in zip(plan, episodes, strict=True)
        ],
        "tally": tally_of(batch).as_metrics(),
        "tally_of_saved": tally_of(saved).as_metrics(),
    }


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    task_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.write_text(json.dumps(asyncio.run(run(task_dir)), indent=2, default=str))


if __name__ == "__main__":
    main()
