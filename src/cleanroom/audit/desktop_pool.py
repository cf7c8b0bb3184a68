"""Running OSWorld tasks' audits by execution on a pool of desktops on this machine.

`DesktopJobPool` is a `pool.JobPool`: the jobs it is given that are OSWorld tasks without
an oracle (`JobKind.OSWORLD_DESKTOP`) each run in one environment of a pool of desktops it
opens for them (``envs`` environments besides the canary, one job in each at a time);
every other job goes to the pool it wraps (the local one). Tasks that are not run here
(`desktop_job.not_run_reason`) are recorded without a desktop, and when no task is left
to run, no pool is started.
"""

from __future__ import annotations

import queue
from pathlib import Path

from cleanroom.audit.desktop_job import audit_on_desktop, not_run_reason
from cleanroom.audit.findings import TaskAudit
from cleanroom.audit.job import AuditSettings
from cleanroom.audit.jobs import AuditJob, JobKind
from cleanroom.audit.pool import JobEvents, JobPool
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.plan import env_name
from cleanroom.environments.providers import PoolConfig, open_pool
from cleanroom.rollouts.osworld_desktop_env import OSWorldDesktopEnv
from cleanroom.verifiers.container.side_by_side import side_by_side
from cleanroom.verifiers.osworld.mirror import Mirror
from cleanroom.verifiers.osworld.task import TaskFileError, load_task

# What each environment runs before a task's setup: a terminal only. OSWorld's tasks start
# the apps they need themselves (``launch`` and ``open`` steps).
DESKTOP_PROGRAMS: tuple[str, ...] = ("terminal",)
WHERE = "local"


class DesktopJobPool:
    """OSWorld tasks without an oracle on ``envs`` desktops; other jobs on ``others``."""

    def __init__(
        self,
        envs: int,
        run_dir: Path,
        others: JobPool,
        programs: tuple[str, ...] = DESKTOP_PROGRAMS,
    ) -> None:
        if envs < 1:
            raise ValueError(f"a pool of desktops needs at least one environment, got {envs}")
        self.envs = envs
        self.run_dir = run_dir
        self.others = others
        self.programs = programs
        self.where = f"a pool of {envs} desktop(s) and the {others.where}"

    def run(self, jobs: list[AuditJob], settings: AuditSettings, events: JobEvents) -> None:
        desktop = [j for j in jobs if j.kind is JobKind.OSWORLD_DESKTOP]
        others = [j for j in jobs if j.kind is not JobKind.OSWORLD_DESKTOP]
        if others:
            self.others.run(others, settings, events)
        mirror = Mirror.parse(settings.mirror) if settings.mirror is not None else None
        runnable: list[AuditJob] = []
        for job in desktop:
            why = _not_run(job, mirror)
            if why:
                events.started(job, WHERE)
                events.done(job, TaskAudit(not_run=why), WHERE)
            else:
                runnable.append(job)
        if runnable:
            self._run_on_desktops(runnable, mirror, events)

    def _run_on_desktops(
        self, jobs: list[AuditJob], mirror: Mirror | None, events: JobEvents
    ) -> None:
        envs = min(self.envs, len(jobs))
        config = PoolConfig(envs=envs, programs=self.programs)
        desktops = open_pool(config, self.run_dir)
        desktops.start()
        try:
            free: queue.Queue[str] = queue.Queue()
            for n in range(1, envs + 1):
                free.put(env_name(n))

            def one(job: AuditJob) -> None:
                name = free.get()
                try:
                    events.started(job, name)
                    env = OSWorldDesktopEnv(
                        LocalHandle(desktops, name), require_a11y_tree=False, mirror=mirror
                    )
                    events.done(job, audit_on_desktop(Path(job.path), env), name)
                finally:
                    free.put(name)

            side_by_side(jobs, one, envs)
        finally:
            desktops.stop()


def _not_run(job: AuditJob, mirror: Mirror | None) -> str:
    """Why the job's task does not run here; "" when it does, or when its file does not
    load (its job says what is wrong with it)."""
    try:
        return not_run_reason(load_task(job.path), mirror)
    except TaskFileError:
        return ""
