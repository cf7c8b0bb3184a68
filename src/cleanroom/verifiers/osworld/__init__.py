"""OSWorld task checkers: load task files, run setup steps and evaluators in a guest.

The metrics and the evaluation order follow OSWorld's own; where OSWorld would score a
checker that failed to run as 0, cleanroom marks the rollout invalid (``checker_error``).
"""

from cleanroom.verifiers.osworld.evaluator import TaskRun, check_task, is_fail_action
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.support import TaskSupport, task_support
from cleanroom.verifiers.osworld.task import Task, TaskFileError, load_task, parse_task
from cleanroom.verifiers.osworld.validate import Validation, validate_task

__all__ = [
    "CheckSettings",
    "Task",
    "TaskFileError",
    "TaskRun",
    "TaskSupport",
    "Validation",
    "check_task",
    "is_fail_action",
    "load_task",
    "parse_task",
    "task_support",
    "validate_task",
]
