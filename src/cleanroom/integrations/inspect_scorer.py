"""cleanroom's verification as an inspect_ai scorer for Harbor tasks (needs
``cleanroom[inspect]``).

    inspect eval cleanroom/harbor_sealed -T path=TASK --solver inspect_harbor/oracle

inspect-harbor's ``harbor_scorer()`` runs the task's tests in the agent's own container
and reads whatever reward file is there: a reward the agent planted, kept alive by a
process it left running, scores 1. `sealed_harbor_scorer` hands the sample's container to
`verify_container_async` instead (``sealed`` by default: the container is frozen and its
state copied into a fresh container of the pristine image with fresh tests) and turns the
outcome into inspect's `Score` (`score_of`):

- success or failure: its score, counted by every metric;
- the agent's own 0 (a planted reward is ``tamper``): 0, counted, with its reason;
- invalid (the infrastructure failed), any exception on the way, a sandbox with no
  container: ``Score.unscored``. Its value is NaN, which inspect leaves out of every
  metric and counts in the results' ``unscored_samples``. It is not NOANSWER, which
  inspect's metrics count as 0, and it is never raised, which would fail the eval.

Every score carries the outcome's JSON in its metadata (`OUTCOME_KEY`), which `tally_of`
counts per eval.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable, Mapping
from typing import Any

from cleanroom.core.errors import ExtraNotInstalledError
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.tally import RewardTally, tally
from cleanroom.integrations.container import (
    ContainerOptions,
    check_engine,
    verify_container_async,
)
from cleanroom.verifiers.container.modes import Mode

try:
    from inspect_ai import Task, task, task_with
    from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
    from inspect_ai.solver import TaskState
    from inspect_ai.util import sandbox as sample_sandbox
    from inspect_harbor import harbor
except ImportError as exc:  # the module is only imported by a caller that has inspect_ai
    raise ExtraNotInstalledError(
        "the inspect_ai scorer", "inspect", exc.name or "inspect_ai"
    ) from exc

from cleanroom.integrations.inspect_sandbox import SANDBOX_NAME

# Where every score's metadata holds the outcome (`Outcome.to_json`).
OUTCOME_KEY = "cleanroom"
# inspect-harbor's sandbox: inspect's docker sandbox (Docker Compose).
DOCKER_SANDBOX = "docker"

__all__ = [
    "OUTCOME_KEY",
    "SANDBOX_NAME",
    "harbor_sealed",
    "outcomes_of",
    "score_of",
    "sealed_harbor_scorer",
    "tally_of",
]


def score_of(outcome: Outcome, context: Mapping[str, Any] | None = None) -> Score:
    """The inspect score of ``outcome``: its score when valid (the agent's own 0 with
    its reason), unscored (NaN, left out of every metric) when invalid. ``context``
    (the container, the mode) goes into the metadata beside the outcome."""
    metadata = {**(context or {}), OUTCOME_KEY: outcome.to_json()}
    reason = outcome.reason.value if outcome.reason else None
    explanation = outcome.detail or None
    if outcome.status is Status.INVALID or outcome.score is None:
        return Score.unscored(
            reason=reason,
            answer=outcome.status.value,
            explanation=explanation,
            metadata=metadata,
        )
    return Score(
        value=outcome.score,
        answer=outcome.status.value,
        reason=reason,
        explanation=explanation,
        metadata=metadata,
    )


@scorer(metrics=[accuracy(), stderr()])
def sealed_harbor_scorer(
    mode: str = Mode.SEALED.value, budget_s: float | None = None, engine: str = "docker"
) -> Scorer:
    """Score a Harbor sample by verifying its container with cleanroom (``mode``:
    ``sealed``, ``cleared``, or ``shared`` for comparison only). ``budget_s`` is the time
    allowed for each verification (None: no limit); ``engine`` is the daemon the
    sandbox's containers run on (``docker`` or ``podman``).

    It must be the task's only scorer, or its last: ``sealed`` and ``cleared`` freeze or
    kill the container, which no later scorer can then use.
    """
    chosen = Mode(mode)
    check_engine(engine)  # a wrong engine fails the task's construction, not every sample
    options = ContainerOptions(mode=chosen, budget_s=budget_s, engine=engine)

    async def score(state: TaskState, target: Target) -> Score:
        context: dict[str, Any] = {"mode": chosen.value, "engine": engine}
        started = time.monotonic()
        outcome = await verify_sample(state.metadata, options, context)
        context["seconds"] = round(time.monotonic() - started, 2)
        return score_of(outcome, context)

    return score


async def verify_sample(
    metadata: Mapping[str, Any], options: ContainerOptions, context: dict[str, Any]
) -> Outcome:
    """The outcome of the current sample's container (named in ``context`` when found),
    verified as ``options`` say; whatever goes wrong on the way is an invalid outcome,
    never an exception."""
    task_dir = metadata.get("task_dir")
    if not isinstance(task_dir, str) or not task_dir:
        return Outcome.invalid(
            Reason.ENVIRONMENT_ERROR, "the sample names no Harbor task folder (task_dir)"
        )
    try:
        connection = await sample_sandbox().connection()
    except Exception as exc:  # no sandbox, or one that cannot say where it runs
        return Outcome.invalid(
            Reason.VERIFIER_UNAVAILABLE, f"the sample's sandbox named no container: {exc!r}"
        )
    if connection.type != "docker" or not connection.container:
        return Outcome.invalid(
            Reason.VERIFIER_UNAVAILABLE,
            f"the sample's sandbox ({connection.type}) has no container on a local daemon",
        )
    context["container"] = connection.container
    try:
        return await verify_container_async(task_dir, connection.container, **options)
    except Exception as exc:  # cleanroom's own fault (or a budget refused): excluded
        return Outcome.invalid(
            Reason.HARNESS_ERROR, f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()
        )


@task
def harbor_sealed(
    path: str | None = None,
    sandbox: str = DOCKER_SANDBOX,
    mode: str = Mode.SEALED.value,
    budget_s: float | None = None,
    engine: str = "docker",
    **harbor_kwargs: Any,
) -> Task:
    """inspect-harbor's ``harbor()`` task (every argument of it but ``sandbox_env_name``
    passes through) scored by `sealed_harbor_scorer` instead of its own scorer.

    ``sandbox`` is ``docker`` (inspect's docker sandbox, as inspect-harbor runs it) or
    ``cleanroom`` (the sample's container started through cleanroom's Docker layer, with
    the task's own limits: `inspect_sandbox`).
    """
    if "sandbox_env_name" in harbor_kwargs:
        raise TypeError("harbor_sealed names its sandbox with sandbox=, not sandbox_env_name=")
    if sandbox not in (DOCKER_SANDBOX, SANDBOX_NAME):
        raise ValueError(f"sandbox={sandbox!r}: choose {DOCKER_SANDBOX} or {SANDBOX_NAME}")
    loaded = harbor(path=path, sandbox_env_name=sandbox, **harbor_kwargs)
    return task_with(
        loaded, scorer=sealed_harbor_scorer(mode=mode, budget_s=budget_s, engine=engine)
    )


def outcomes_of(samples: Iterable[Any]) -> list[Outcome]:
    """The cleanroom outcomes in the scores of an eval log's samples (one per sample
    and epoch). A sample that errored before it was scored has none: inspect counts it
    among its errors."""
    found: list[Outcome] = []
    for sample in samples:
        for each in (sample.scores or {}).values():
            data = (each.metadata or {}).get(OUTCOME_KEY)
            if data is not None:
                found.append(Outcome.from_json(data))
    return found


def tally_of(log: Any) -> RewardTally:
    """The outcomes of an eval log (``inspect_ai.log.EvalLog``) counted: what inspect's
    metrics do not show, the excluded samples and the agent's own 0s, by reason
    (``tally_of(log).as_metrics()``). The log must hold its samples (not read with
    ``header_only``); a log with none (an eval that never ran a sample) is a
    `ValueError` saying why, not a tally of zeros."""
    if log.samples is None:
        raise ValueError("the eval log was read without its samples (header_only)")
    if not log.samples:
        # An eval with no solver and no model ends so: a tally of zeros would read as a
        # result.
        error = getattr(getattr(log, "error", None), "message", "")
        why = error or f"its status is {getattr(log, 'status', 'unknown')!r}"
        raise ValueError(f"the eval holds no sample to count ({str(why)[:300]})")
    return tally(outcomes_of(log.samples))
