"""cleanroom: rewards you can trust.

Verifiers that cannot be fooled by the known forging routes, environments whose
isolation is measured by detectors that are proven to fire, and a published isolation
number only next to a positive control that fired.

For a loop that already has a Harbor task and a finished agent environment::

    import cleanroom

    outcome = cleanroom.verify_container("tasks/fix-median", "trial-main-1")
    reward = cleanroom.reward_or_none(outcome)  # None when invalid: excluded, never a 0

`verify_environment_async` does the same for a Harbor environment (``cleanroom[harbor]``).
Every exception cleanroom raises on purpose is a `CleanroomError`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cleanroom.core.errors import (
    BudgetTooShortError,
    CleanroomError,
    ExtraNotInstalledError,
    InvalidOutcomeError,
    UnsupportedByRuntimeError,
    VerifierUnavailableError,
)
from cleanroom.core.isolation import IsolationRow, RowResult, Window, judge_window
from cleanroom.core.outcomes import Cause, Outcome, Reason, Status
from cleanroom.core.publish import ControlResult, Publication, Refusal, publish
from cleanroom.core.tally import RewardTally, tally
from cleanroom.core.tokens import RolloutId, Token, TokenHit, mint, parse, scan_bytes

if TYPE_CHECKING:
    from cleanroom.integrations.container import verify_container, verify_container_async
    from cleanroom.integrations.environment import verify_environment, verify_environment_async
    from cleanroom.integrations.ray_verify import verify_container_on_ray, verify_on_ray
    from cleanroom.integrations.rewards import reward_info, reward_or_none, rewards_of
    from cleanroom.tree_scan import scan_tree
    from cleanroom.verifiers.container.modes import Mode
    from cleanroom.verifiers.container.task import TaskError

__version__ = "0.1.0"

# Imported when first used: the verification pulls in the Docker layer,
# `verify_environment` needs Harbor (``cleanroom[harbor]``) and `verify_on_ray` Ray
# (``cleanroom[ray]``, imported only when called).
_LAZY = {
    "Mode": "cleanroom.verifiers.container.modes",
    "TaskError": "cleanroom.verifiers.container.task",
    "reward_info": "cleanroom.integrations.rewards",
    "reward_or_none": "cleanroom.integrations.rewards",
    "rewards_of": "cleanroom.integrations.rewards",
    "scan_tree": "cleanroom.tree_scan",
    "verify_container": "cleanroom.integrations.container",
    "verify_container_async": "cleanroom.integrations.container",
    "verify_container_on_ray": "cleanroom.integrations.ray_verify",
    "verify_environment": "cleanroom.integrations.environment",
    "verify_environment_async": "cleanroom.integrations.environment",
    "verify_on_ray": "cleanroom.integrations.ray_verify",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cleanroom' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "BudgetTooShortError",
    "Cause",
    "CleanroomError",
    "ControlResult",
    "ExtraNotInstalledError",
    "InvalidOutcomeError",
    "IsolationRow",
    "Mode",
    "Outcome",
    "Publication",
    "Reason",
    "Refusal",
    "RewardTally",
    "RolloutId",
    "RowResult",
    "Status",
    "TaskError",
    "Token",
    "TokenHit",
    "UnsupportedByRuntimeError",
    "VerifierUnavailableError",
    "Window",
    "judge_window",
    "mint",
    "parse",
    "publish",
    "reward_info",
    "reward_or_none",
    "rewards_of",
    "scan_bytes",
    "scan_tree",
    "tally",
    "verify_container",
    "verify_container_async",
    "verify_container_on_ray",
    "verify_environment",
    "verify_environment_async",
    "verify_on_ray",
]
