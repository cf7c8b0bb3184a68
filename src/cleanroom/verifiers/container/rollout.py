"""cleanroom's own rollout: the task's image, an agent container, the agent phase, then
the verification in the rollout's mode (`Verification`)."""

from __future__ import annotations

import time
import traceback
from pathlib import Path

from cleanroom.core.outcomes import Outcome
from cleanroom.docker_layer import ImageBuildFailed
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, VerificationRuntime
from cleanroom.verifiers.container.sidecars import ServiceFailed, SidecarGroup
from cleanroom.verifiers.container.steps import StepOutcome, combine, next_step_runs
from cleanroom.verifiers.container.tamper import (
    Change,
    ChangeKind,
)
from cleanroom.verifiers.container.task import (
    ARTIFACTS_DIR,
    Task,
    TaskStep,
)
from cleanroom.verifiers.container.verdict import (
    Evidence,
)
from cleanroom.verifiers.container.verification import (
    AGENT_FILES_DIR,
    TAIL_CHARS,
    TESTS_DIR,
    Unhealthy,
    Verification,
    output_tail,
)
from cleanroom.verifiers.container.verify_options import AgentSpec, VerifyOptions


class Rollout(Verification):
    """cleanroom's own rollout: the task's image, an agent container, the agent phase.

    A multi-step task runs its steps in order in the one agent container, as Harbor
    does: each step's agent phase, then its verification in the rollout's mode; the
    container goes on to the next step as that left it (`steps` makes the score).
    ``only_step`` runs that step alone, the pristine control of a step: with no agent,
    the steps before it change nothing the sealed verifier reads.
    """

    def __init__(
        self,
        task: Task,
        agent: AgentSpec,
        runtime: VerificationRuntime,
        options: VerifyOptions,
        image: str | None = None,
        only_step: TaskStep | None = None,
    ) -> None:
        super().__init__(task, agent.label, runtime, options)
        self.agent = agent
        self.collect_hooks = list(task.config.verifier.collect)
        # An image already built from the task's environment; otherwise built or reused.
        self.given_image = image
        self.only_step = only_step

    def execute(self) -> Outcome:
        started = time.monotonic()
        try:
            if not self._resolve_env():
                return self._decide(started)
            with self._timed("build_s"):
                image = self._image()
                service_images = self._service_images() if image is not None else None
            if image is None or service_images is None or not self._verifier_image():
                return self._decide(started)
            if service_images:
                with self._timed("services_s"):
                    self._start_services(service_images)
            if not self.task.steps and self.verifies_apart and not self.vcfg.live_processes:
                # A verifier that talks to no process of the agent's starts beside the
                # agent's container: its start is the longest wait of a verification.
                self._start_verifier_early(None, self.separate_image or image)
            agent_ctr = self._start_agent_container(image)
            with self._timed("healthcheck_s"):
                unhealthy = self._unhealthy(agent_ctr, self.task.config.environment.healthcheck)
            if unhealthy:
                self.ev.environment_error = f"before the agent phase, {unhealthy}"
                return self._decide(started)
            if self.task.steps:
                return self._run_steps(agent_ctr, image, started)
            self._act_and_verify(agent_ctr, image)
        except RuntimeUnavailable as exc:
            self.ev.unavailable = str(exc)
        except (Unhealthy, ServiceFailed) as exc:
            self.ev.environment_error = str(exc)
        return self._decide(started)

    def _service_images(self) -> dict[str, str] | None:
        """Each compose service's image, built or found; None (the failure in the
        evidence) when one cannot be made."""
        compose = self.task.compose
        if compose is None:
            return {}
        images: dict[str, str] = {}
        for service in compose.services:
            try:
                images[service.name] = self.rt.images.for_service(
                    self.task, service, dict(self.options.image_map)
                )
            except ImageBuildFailed as exc:
                self.ev.environment_error = (
                    f"the image of compose service {service.name!r} ({exc.tag}) could not be made"
                )
                self.ev.build_log = exc.log
                return None
        return images

    def _start_services(self, images: dict[str, str]) -> None:
        """Start the compose services and wait until they are ready, as ``docker compose
        up --wait`` does before Harbor starts the agent."""
        assert self.task.compose is not None
        self.services = SidecarGroup(self.rt, self.task.compose, self.task.name)
        limit = self.task.config.environment.build_timeout_sec
        self.services.start(images, self.limits.network, limit)
        self.services.wait_for_main(limit)
        self.ev.details["services"] = sorted(self.services.containers)

    def _run_steps(self, agent_ctr: str, image: str, started: float) -> Outcome:
        """Each step's agent phase and verification, in order, until one ends the run."""
        steps = [self.only_step] if self.only_step is not None else list(self.task.steps)
        # What the rollout saw before its first step holds for all of them.
        kept = ("task", "agent", "image", "image_built", "task_warnings", "healthcheck", "services")
        common = {k: v for k, v in self.ev.details.items() if k in kept}
        done: list[StepOutcome] = []
        for index, step in enumerate(steps):
            self.more_steps = index < len(steps) - 1
            result = StepOutcome(step.config, self._run_step(step, agent_ctr, image))
            done.append(result)
            if not next_step_runs(result):
                break
            if self.more_steps and self.plan.in_agent_container:
                self._reset_verifier_places(agent_ctr)
        if self.only_step is not None:
            return done[0].outcome
        details = {**common, "mode": self.options.mode.value}
        details["timings"] = {"total_s": round(time.monotonic() - started, 4)}
        return combine(done, self.task.config.reward_strategy, len(steps), details)

    def _run_step(self, step: TaskStep, agent_ctr: str, image: str) -> Outcome:
        """One step, recorded in an `Evidence` of its own and decided alone."""
        started = time.monotonic()
        self.step = step
        self.ev = Evidence(self.options.mode)
        self.ev.details.update(task=self.task.name, agent=self.agent.label, step=step.name)
        self.ev.details["image"] = image
        self.timings = {}
        try:
            vcfg = self._step_verifier(step)
            if vcfg is None:
                return self._decide(started)
            self.vcfg = vcfg
            self._act_and_verify(agent_ctr, image)
        except RuntimeUnavailable as exc:
            self.ev.unavailable = str(exc)
        except Unhealthy as exc:
            self.ev.environment_error = str(exc)
        except Exception as exc:  # a bug of cleanroom's own: this step's outcome says so
            self.ev.harness_error = "".join(traceback.format_exception(exc))[-TAIL_CHARS:]
        return self._decide(started)

    def _reset_verifier_places(self, ctr: str) -> None:
        """Empty ``/tests`` and the reward folder a verifier used in the agent's container
        before the next step's agent phase, as Harbor does: the next step's agent sees
        no tests, and its verifier no earlier reward."""
        script = 'rm -rf -- "$1" && mkdir -p "$2" && find "$2" -mindepth 1 -delete'
        done = self.rt.containers.exec(
            ctr, ["sh", "-c", script, "reset", TESTS_DIR, self.vcfg.reward_dir], user="0"
        )
        if done.exit_code != 0:
            # The agent may have made them unremovable; its next verification finds that.
            self.ev.details["reset_failed"] = output_tail(done.output, 300)

    def _image(self) -> str | None:
        try:
            if self.given_image is not None:
                image, built = self.given_image, False
            else:
                image, built = self.rt.images.for_task(self.task, dict(self.options.image_map))
        except ImageBuildFailed as exc:
            self.ev.environment_error = f"the task image {exc.tag} could not be made"
            self.ev.build_log = exc.log
            return None
        self.ev.details.update(image=image, image_built=built)
        if self.workdir is None:
            self.workdir = self.rt.images.workdir(image)
        return image

    def _start_agent_container(self, image: str) -> str:
        binds: dict[Path, str] = {}
        if self.plan.freezes_agent:
            # The agent's own reward folder is a host folder, watched from the host: what
            # the agent leaves there is an attempt at forging, found without an exec.
            self.agent_reward_dir = self._workspace() / "agent-verifier"
            self.agent_reward_dir.mkdir()
            self.agent_reward_dir.chmod(0o777)
            binds[self.agent_reward_dir] = self.vcfg.reward_dir
        # The reward and log folders start empty, whatever the image holds there: what is
        # found in them afterwards is the agent's (Harbor mounts host folders there).
        hidden = sorted({self.vcfg.reward_dir, "/logs/verifier", "/logs/agent", ARTIFACTS_DIR})
        # Where the reward is read in this container, /logs is a volume: the archive API
        # that reads it does not see a tmpfs.
        ctr = self.rt.containers.start_agent(
            image,
            self.limits,
            self.workdir,
            self.task.name,
            binds,
            self.task_env,
            hidden,
            logs_on_volume=not self.plan.freezes_agent,
            services_network=self.services.network if self.services else None,
        )
        self.containers.append(ctr)
        # Harbor gives the agent a world-writable /logs/verifier; the naive modes need the
        # same so that the attacks they control for are real.
        dirs = sorted({"/logs", self.vcfg.reward_dir, "/logs/agent", ARTIFACTS_DIR})
        made = self.rt.containers.exec(
            ctr, ["sh", "-c", 'mkdir -p "$@" && chmod 0777 "$@"', "mkdirs", *dirs], user="0"
        )
        if made.exit_code != 0:
            raise RuntimeUnavailable(f"preparing {dirs} failed: {output_tail(made.output)}")
        if self.plan.freezes_agent:
            # The reward folder is a bind mount: Docker makes its mount point in the
            # container's own layer whenever it copies files in (the solution), so it is
            # the harness's change, not the agent's.
            mount_points = [
                Change(self.vcfg.reward_dir, ChangeKind.ADDED),
                Change(ARTIFACTS_DIR, ChangeKind.ADDED),
            ]
            self.baseline = [*self.rt.state.changes(ctr).changes, *mount_points]
        return ctr

    def _act_and_verify(self, agent_ctr: str, image: str) -> None:
        """The agent phase, Harbor's collect hooks for main (before main is stopped, and
        in each step's collection of a multi-step task), then the verification."""
        if self.verifies_apart and self.early_verifier is None:
            self._start_verifier_early(agent_ctr, self.separate_image or image)
        with self._timed("agent_s"):
            self._agent_phase(agent_ctr)
        self._collect(agent_ctr, in_main=True)
        self._verify_agent_container(agent_ctr, image)

    def _agent_phase(self, ctr: str) -> None:
        argv = self._agent_argv(ctr)
        if argv is None:
            self.ev.details["agent_phase"] = {"ran": False}
            return
        agent = self.task.config.agent
        own = self.step.config.agent if self.step is not None else None
        result = self.rt.containers.exec(
            ctr,
            argv,
            user=own.user if own is not None and own.user is not None else agent.user,
            env=self.solution_env if self.agent.runs_solution else None,
            workdir=self.workdir,
            timeout=own.timeout_sec if own is not None and own.timeout_sec else agent.timeout_sec,
        )
        self.ev.details["agent_phase"] = {
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "seconds": round(result.seconds, 3),
            "output_tail": output_tail(result.output),
        }

    def _agent_argv(self, ctr: str) -> list[str] | None:
        if self.agent.kind == "noop":
            return None
        if self.agent.runs_solution:
            solution = self.step.solution_dir if self.step is not None else self.task.solution_dir
            if not (solution / "solve.sh").is_file():
                where = f"step {self.step.name!r}" if self.step is not None else self.task.name
                raise RuntimeUnavailable(f"{where} has no solution/solve.sh")
            self.rt.containers.put_dir(ctr, solution, "/solution")
        if self.agent.kind == "solution":
            return ["bash", "/solution/solve.sh"]
        if self.agent.files:
            folder = self._workspace() / "agent-files"
            folder.mkdir(exist_ok=True)
            for name, data in self.agent.files:
                (folder / name).write_bytes(data)
            self.rt.containers.put_dir(ctr, folder, AGENT_FILES_DIR)
        return ["bash", "-c", self.agent.text]
