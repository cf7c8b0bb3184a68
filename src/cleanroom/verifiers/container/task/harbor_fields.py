"""Every field of Harbor's task model and what cleanroom does with it."""

from __future__ import annotations

# Every field of Harbor's task model, by its dotted path in task.toml (a list of tables is
# ``name[]``), and what cleanroom does with it: "read" (Harbor's meaning), "kept" (carried,
# it changes nothing that runs), or the reason it is refused. A path covers the fields
# under it. tests/unit/container/test_harbor_fields.py holds this to the pinned release.
HARBOR_FIELDS: dict[str, str] = {
    "schema_version": "kept",
    "version": "kept",
    "task": "kept",
    "metadata": "kept",
    "source": "kept",
    "agent.timeout_sec": "read",
    "agent.user": "read",
    "agent.network_mode": "read: no-network or public; allowlist refused",
    "agent.allowed_hosts": "refused: egress allowlists",
    "verifier.timeout_sec": "read",
    "verifier.env": "read, with ${VAR} and ${VAR:-default} from the host",
    "verifier.user": "read",
    "verifier.network_mode": "read: the sealed verifier's network; allowlist refused",
    "verifier.allowed_hosts": "refused: egress allowlists",
    "verifier.environment_mode": "read: shared, or separate (test.sh in its own container)",
    "verifier.environment": "read: the separate verifier's environment, as [environment]",
    "verifier.environment.allowed_hosts": "refused: egress allowlists",
    "verifier.environment.gpu_types": "refused: GPUs",
    "verifier.environment.tpu": "refused: TPUs",
    "verifier.environment.mcp_servers": "read: servers for an agent; the verifier's are unused",
    "verifier.environment.skills_dir": "read: a folder for an agent; the verifier's is unused",
    "verifier.collect": "read: main's before it stops; the services' after (sealed) or beside it",
    "environment.network_mode": "read: no-network or public; allowlist refused",
    "environment.allowed_hosts": "refused: egress allowlists",
    "environment.allow_internet": "read",
    "environment.build_timeout_sec": "read",
    "environment.docker_image": "read: used when there is no Dockerfile",
    "environment.os": "read: linux; windows refused",
    "environment.cpus": "read",
    "environment.memory_mb": "read",
    "environment.memory": "read",
    "environment.storage_mb": "kept: enforced by neither Harbor's docker environment nor cleanroom",
    "environment.storage": "kept: enforced by neither Harbor's docker environment nor cleanroom",
    "environment.gpus": "read: 0; more refused",
    "environment.gpu_types": "refused: GPUs",
    "environment.tpu": "refused: TPUs",
    "environment.mcp_servers": "read: the agent's MCP servers, for the agent",
    "environment.env": "read, with ${VAR} and ${VAR:-default} from the host",
    "environment.skills_dir": "read: the agent's skills folder in the environment, for the agent",
    "environment.healthcheck": "read: waited for before the agent phase",
    "environment.workdir": "read",
    "solution.env": "read, with ${VAR} and ${VAR:-default} from the host",
    "multi_step_reward_strategy": "read: mean (the default) or final over the steps' rewards",
    "steps.name": "read: the step's folder under steps/",
    "steps.agent.timeout_sec": "read: the task's when unset",
    "steps.agent.user": "read: the task's when unset",
    "steps.agent.network_mode": "read: the task's agent network; another one refused",
    "steps.agent.allowed_hosts": "refused: egress allowlists",
    "steps.verifier.timeout_sec": "read: 600 s when unset, as in Harbor",
    "steps.verifier.env": "read: added to [verifier.env], ${VAR} templates from the host",
    "steps.verifier.user": "read: the task's when unset",
    "steps.verifier.network_mode": "read: the step's sealed verifier network",
    "steps.verifier.allowed_hosts": "refused: egress allowlists",
    "steps.verifier.environment_mode": "read: shared; separate refused",
    "steps.verifier.environment": "refused: separate verifier environments",
    "steps.verifier.collect": "refused: a step's collect hooks",
    "steps.min_reward": "read: a step below it ends the rollout's steps",
    "steps.healthcheck": "refused: per-step healthchecks",
    "steps.artifacts": "refused: artifact collection",
    "artifacts": "read: carried into the verifier at their paths, collected on the host",
    "artifacts.service": "read: the agent's container (main); compose services refused",
}


# Tables whose fields are listed one by one: a new field in them is not covered.
HARBOR_SECTIONS = (
    "agent",
    "verifier",
    "environment",
    "solution",
    "steps",
    "steps.agent",
    "steps.verifier",
)


def harbor_field_status(field_path: str) -> str | None:
    """What cleanroom does with a Harbor field (`HARBOR_FIELDS`), or None if unlisted."""
    path = field_path.replace("[]", "")
    if path in HARBOR_SECTIONS:
        return "a section"
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        status = HARBOR_FIELDS.get(".".join(parts[:i]))
        if status is not None:
            return status
    return None
