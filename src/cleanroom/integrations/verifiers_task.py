"""cleanroom's sealed verification as the reward of verifiers' Harbor tasks (needs
``cleanroom[verifiers]``, Python 3.12 or later).

    from cleanroom.integrations.verifiers_task import sealed_harbor_env

    env = sealed_harbor_env({"path": "tasks/"}, agent={"runtime": {"type": "docker"}})

verifiers' own `HarborTask.solved` stages the tests in the agent's live container and
reads whatever reward file is there: a reward the agent planted, kept alive by a process
it left running, scores 1. `SealedHarborTask.solved` hands the rollout's container to
`verify_container_async` instead, ``sealed``: the container is frozen and its state
copied into a fresh container of the pristine image with fresh tests.

- success or failure: its score, as the ``solved`` reward;
- the agent's own 0 (a planted reward is ``tamper``): 0.0, scored, with its reason;
- invalid (the infrastructure failed): verifiers' `TaskError`, its "no score" path: the
  trace is not ok and ``rewards["solved"]`` stays None, never a 0.

Every trace carries the outcome's JSON in ``trace.info`` (`OUTCOME_KEY`) and two numbers
in its metrics (`AGENT_CAUSED_METRIC`, `EXCLUDED_METRIC`); `tally_of` counts a batch.

verifiers loads Harbor tasks only from Harbor's registry and builds no Dockerfile;
`SealedHarborTaskset` also reads a local folder and builds each task's image with
cleanroom's own Docker layer. verifiers 0.4.0 resolves a taskset id only as one of its
own tasksets or a top-level module, never a dotted path: `sealed_harbor_env` registers
this module as `TASKSET_ID` in the process, and a two-line top-level module re-exporting
`SealedHarborTaskset` and `HarborEnv` (with ``__all__``) names it for ``vf-eval`` and
env servers.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from cleanroom.core.errors import BudgetTooShortError, ExtraNotInstalledError, invalid_outcome_error
from cleanroom.core.outcomes import Cause, Outcome, Reason, Status
from cleanroom.core.tally import RewardTally, tally
from cleanroom.integrations.container import verify_container_async
from cleanroom.integrations.rewards import reward_or_none
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import load_task

try:
    from verifiers.v1.agent import resolve_rollout_timeouts
    from verifiers.v1.errors import TaskError
    from verifiers.v1.runtimes import Runtime
    from verifiers.v1.taskset import Taskset
    from verifiers.v1.tasksets.harbor import HarborConfig, HarborEnv, HarborTask
    from verifiers.v1.tasksets.harbor.taskset import dataset_dir, parse_task
    from verifiers.v1.trace import Trace
    from verifiers.v1.utils.decorators import reward
    from verifiers.v1.utils.loaders import load_environment, resolve_env_config
except ImportError as exc:  # the module is only imported by a caller that has verifiers
    raise ExtraNotInstalledError(
        "the verifiers Harbor taskset", "verifiers", exc.name or "verifiers"
    ) from exc

# Where every trace's info holds the outcome (`Outcome.to_json`).
OUTCOME_KEY = "cleanroom"
# Per-trace metrics: 1.0 when the rollout's 0 is the agent's own act, 1.0 when excluded.
AGENT_CAUSED_METRIC = "cleanroom/agent_caused"
EXCLUDED_METRIC = "cleanroom/excluded"
# The name `sealed_harbor_env` registers this module under, as verifiers' loader needs.
TASKSET_ID = "cleanroom_sealed_harbor"
# The only runtime whose box cleanroom reaches: verifiers' local Docker containers.
DOCKER_RUNTIME = "docker"
# Kept from verifiers' scoring timeout for handing the outcome back: a verification still
# running at that deadline is cancelled, and the trace keeps ok=True with no reward.
SCORING_MARGIN_S = 5.0

# verifiers' loader takes the one `Taskset` and the one `Env` exported here as the plugin.
__all__ = [
    "AGENT_CAUSED_METRIC",
    "EXCLUDED_METRIC",
    "OUTCOME_KEY",
    "TASKSET_ID",
    "HarborEnv",
    "SealedHarborConfig",
    "SealedHarborTask",
    "SealedHarborTaskset",
    "outcomes_of",
    "sealed_harbor_env",
    "tally_of",
]


class SealedHarborTask(HarborTask):
    """verifiers' Harbor task whose ``solved`` reward is cleanroom's verification of the
    rollout's container, not the task's tests run beside the agent's processes."""

    @reward(weight=1.0)
    async def solved(self, runtime: Runtime, trace: Trace) -> float:
        """The verified score; raises `TaskError` (no score) when the outcome is invalid.

        A float, not verifiers' ``{"reward": x}``: the reward keeps the hook's name, so
        ``rewards["solved"]`` is the score when valid and stays None when excluded."""
        budget_s = scoring_budget(trace, self)
        outcome = await verify_rollout(self.data.task_dir, runtime, budget_s)
        record_outcome(trace, outcome)
        score = reward_or_none(outcome)
        if score is None:
            error = invalid_outcome_error(outcome)
            raise TaskError(str(error)) from error
        return score


class SealedHarborConfig(HarborConfig):
    """verifiers' Harbor taskset config, plus a local folder of tasks."""

    path: Path | None = None
    """A local Harbor task folder, or a folder of them; None loads `dataset` from
    Harbor's registry, as verifiers' own Harbor taskset does."""
    ignore_separate_verifier: bool = True
    """True: a task asking for a separate verifier is still scored at the end of the
    agent's rollout, where cleanroom verifies it in a fresh container of the verifier's
    own image; False hands it to verifiers' separate-verifier grading instead."""


class SealedHarborTaskset(Taskset[SealedHarborTask, SealedHarborConfig]):
    """Harbor tasks whose reward is sealed, from a local folder or Harbor's registry,
    each task's ``environment/Dockerfile`` built with cleanroom's Docker layer (verifiers
    builds none)."""

    def load(self) -> Iterator[SealedHarborTask]:
        """Each task, parsed by verifiers' own Harbor parser, with its image."""
        root = Path(self.config.path) if self.config.path else dataset_dir(self.config)
        names = self.config.tasks
        found = [root / "task.toml"] if (root / "task.toml").is_file() else []
        task_dirs = [
            toml.parent
            for toml in found or sorted(root.rglob("task.toml"))
            if names is None or toml.parent.name in names
        ]
        if not task_dirs:
            raise ValueError(f"no Harbor tasks found in {root}")
        # Past verifiers' refusal of a Dockerfile: the image is built below.
        parsing = self.config.model_copy(update={"ignore_dockerfile": True})
        builder: DockerRuntime | None = None
        for idx, task_dir in enumerate(task_dirs):
            data = parse_task(task_dir, idx, parsing)
            if data.image is None and needs_build(task_dir):
                builder = builder or DockerRuntime.connect()
                image, _ = builder.images.for_task(load_task(task_dir))
                data = data.model_copy(update={"image": image})
            yield SealedHarborTask(data, self.config.task)


def needs_build(task_dir: Path) -> bool:
    """Whether the task's main container comes from its ``environment/Dockerfile`` (a
    Compose task's comes from its compose file, which verifiers' Harbor env starts)."""
    environment = task_dir / "environment"
    return (environment / "Dockerfile").is_file() and not (
        environment / "docker-compose.yaml"
    ).is_file()


def sealed_harbor_env(taskset: Mapping[str, Any], **env: Any) -> HarborEnv:
    """verifiers' Harbor env on `SealedHarborTaskset`: ``taskset`` takes the fields of
    verifiers' Harbor taskset config and `SealedHarborConfig`'s, ``env`` the rest of the
    env config (``agent``, ...), as ``--env.*`` would."""
    sys.modules.setdefault(TASKSET_ID, sys.modules[__name__])
    config = resolve_env_config({**env, "taskset": {**taskset, "id": TASKSET_ID}})
    loaded: HarborEnv = load_environment(config)
    return loaded


def scoring_budget(trace: Trace, task: HarborTask) -> float | None:
    """What is left of verifiers' scoring timeout for the verification (None: no
    limit), less `SCORING_MARGIN_S`: the run's ``agent.timeout.scoring``, else the
    task's own, as verifiers resolves it."""
    limit = resolve_rollout_timeouts(trace.agent.config.timeout, task).scoring
    if limit is None:
        return None
    started = trace.timing.scoring.start
    spent = time.time() - started if started else 0.0
    return float(limit) - spent - SCORING_MARGIN_S


async def verify_rollout(task_dir: str, runtime: Runtime, budget_s: float | None) -> Outcome:
    """The outcome of the rollout's container, verified sealed; whatever goes wrong on
    the way is an invalid outcome, never an exception."""
    container = getattr(runtime.info, "id", None)
    if runtime.type != DOCKER_RUNTIME or not container:
        return Outcome.invalid(
            Reason.VERIFIER_UNAVAILABLE,
            f"the rollout ran on a {runtime.type} runtime: cleanroom verifies a local "
            f"Docker container (agent.runtime.type = {DOCKER_RUNTIME})",
        )
    if budget_s is not None and budget_s <= 0:
        return Outcome.invalid(
            Reason.HARNESS_ERROR, "verifiers' scoring timeout had expired before verification"
        )
    try:
        return await verify_container_async(
            task_dir, container, mode=Mode.SEALED, budget_s=budget_s
        )
    except BudgetTooShortError as exc:
        return Outcome.invalid(
            Reason.HARNESS_ERROR,
            f"{exc}; verifiers' scoring timeout (agent.timeout.scoring) sets the budget",
        )
    except Exception as exc:  # cleanroom's own fault: excluded, with the traceback
        return Outcome.invalid(
            Reason.HARNESS_ERROR, f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()
        )


def record_outcome(trace: Trace, outcome: Outcome) -> None:
    """Put ``outcome`` on the trace: its JSON in ``info`` (metrics must be numbers), and
    whether it is the agent's own 0 or excluded in the metrics."""
    trace.info[OUTCOME_KEY] = outcome.to_json()
    trace.record_metrics(
        {
            AGENT_CAUSED_METRIC: float(outcome.caused_by is Cause.AGENT),
            EXCLUDED_METRIC: float(outcome.status is Status.INVALID),
        }
    )


def outcomes_of(results: Iterable[Any]) -> list[Outcome]:
    """The cleanroom outcomes on a batch's traces: verifiers' episodes, traces, or
    their saved records (a line of ``traces.jsonl``, ``Trace.to_record()``). A trace
    that ended before it was scored has none: verifiers counts it among its errors."""
    found: list[Outcome] = []
    for result in results:
        traces = _field(result, "traces")
        for trace in [result] if traces is None else traces:
            data = (_field(trace, "info") or {}).get(OUTCOME_KEY)
            if data is not None:
                found.append(Outcome.from_json(data))
    return found


def tally_of(results: Iterable[Any]) -> RewardTally:
    """A batch's outcomes counted: what a mean reward does not show, the excluded
    rollouts and the agent's own 0s, by reason (``tally_of(episodes).as_metrics()``)."""
    return tally(outcomes_of(results))


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
