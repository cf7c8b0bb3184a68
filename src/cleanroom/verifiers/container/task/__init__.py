"""A Harbor-layout task: its folder, and the typed model of its ``task.toml``.

The package, by job: `section_rules` (what every section shares), `environment_config`,
`sections` and `task_config` (the typed sections, ``[environment]`` first since the
verifier's own environment is one), `folder` (a loaded task), `harbor_fields` (Harbor's
field table), `templating` (``${VAR}`` and base images), the compose file beside the
Dockerfile (`compose_model`, `compose_fields`, `compose`) and `loading` (the folder and its
TOML, with the line of a bad key). Its public names are re-exported here.

This model is the one the core reads a task with. Where Harbor is installed, its
integration validates ``task.toml`` with Harbor's own model first and maps Harbor's
parsed values into this one (`integrations.harbor_task`); `task_config_of` and
`task_of` are the steps both ways share.

Layout::

    task.toml  instruction.md  environment/Dockerfile  tests/test.sh  solution/solve.sh

or, for a multi-step task (``[[steps]]``), no top-level ``instruction.md`` and a folder a
step: ``steps/<name>/instruction.md``, ``steps/<name>/tests/``, ``steps/<name>/solution/``.

Every field of Harbor's task model (pinned: ``tests/data/harbor/task-fields.json``) is
either read with Harbor's meaning or refused by name (`HARBOR_FIELDS` says which, and
why): a field that would change what runs is never silently ignored. Keys neither Harbor
nor cleanroom knows are kept (``extra``) and reported as warnings naming their line, as
Harbor ignores them too. A malformed file, a known key with a wrong value, or a refused
field is a `TaskConfigError` naming the line and the field.
"""

from __future__ import annotations

from cleanroom.verifiers.container.task.environment_config import (
    ARTIFACTS_DIR,
    MANIFEST_NAME,
    ArtifactEntry,
    EnvironmentConfig,
    HealthcheckConfig,
)
from cleanroom.verifiers.container.task.errors import (
    TaskConfigError,
    TaskError,
    TaskLayoutError,
    TaskWarning,
    TemplateError,
)
from cleanroom.verifiers.container.task.folder import Task, TaskStep, VerifierEnvironment
from cleanroom.verifiers.container.task.harbor_fields import (
    HARBOR_FIELDS,
    HARBOR_SECTIONS,
    harbor_field_status,
)
from cleanroom.verifiers.container.task.loading import (
    load_task,
    parse_task_toml,
    task_config_of,
    task_of,
)
from cleanroom.verifiers.container.task.section_rules import DEFAULT_REWARD_PATH, NetworkMode
from cleanroom.verifiers.container.task.sections import (
    AgentConfig,
    CollectHook,
    PackageInfo,
    SolutionConfig,
    VerifierConfig,
)
from cleanroom.verifiers.container.task.task_config import (
    MultiStepRewardStrategy,
    StepAgentConfig,
    StepConfig,
    StepVerifierConfig,
    TaskConfig,
)
from cleanroom.verifiers.container.task.templating import resolve_env, rewrite_base_images

__all__ = [
    "ARTIFACTS_DIR",
    "DEFAULT_REWARD_PATH",
    "HARBOR_FIELDS",
    "HARBOR_SECTIONS",
    "MANIFEST_NAME",
    "AgentConfig",
    "ArtifactEntry",
    "CollectHook",
    "EnvironmentConfig",
    "HealthcheckConfig",
    "MultiStepRewardStrategy",
    "NetworkMode",
    "PackageInfo",
    "SolutionConfig",
    "StepAgentConfig",
    "StepConfig",
    "StepVerifierConfig",
    "Task",
    "TaskConfig",
    "TaskConfigError",
    "TaskError",
    "TaskLayoutError",
    "TaskStep",
    "TaskWarning",
    "TemplateError",
    "VerifierConfig",
    "VerifierEnvironment",
    "harbor_field_status",
    "load_task",
    "parse_task_toml",
    "resolve_env",
    "rewrite_base_images",
    "task_config_of",
    "task_of",
]
