"""A Harbor task's container as an inspect_ai sandbox, on cleanroom's Docker layer
(needs ``cleanroom[inspect]``).

    inspect eval cleanroom/harbor_sealed -T path=TASK -T sandbox=cleanroom ...

inspect's own ``docker`` sandbox drives Docker Compose and refuses a Docker Engine older
than 24.0.6. This one, ``cleanroom``, starts the sample's container the way cleanroom
starts an agent's container for its own rollouts (`DockerContainers.start_agent`): the
task's image built once per content, the network, memory, CPU and process limits that
``task.toml`` sets (inspect-harbor's compose file drops ``network = false`` and
``pids_limit``), ``/logs`` its own, and the reward folder a host folder bound in, as
Harbor binds one (so the daemon must run on this machine). `connection()` names the
container, so the sealed scorer verifies it as it would a docker sandbox's; the
container and the host folder are removed when the sample ends.

What the harness reads from the container (inspect-harbor's scorer reads the reward the
agent could have written) is read through the daemon's archive API, capped at inspect's
read limit, and no program of the container's takes part; a command's output is capped
at inspect's exec limit.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import posixpath
import secrets
import shlex
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

from cleanroom.core.errors import ExtraNotInstalledError
from cleanroom.core.observed_file import FileKind, ObservedFile
from cleanroom.docker_layer import ImageBuildFailed
from cleanroom.exec_result import ExecResult as CommandResult
from cleanroom.host_files import remove_tree
from cleanroom.verifiers.container.run.commands import check_health
from cleanroom.verifiers.container.run.context import resolve_environments
from cleanroom.verifiers.container.runtime import AgentContainerSpec, Limits, RuntimeUnavailable
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.runtime.docker.tar import kind_of_mode
from cleanroom.verifiers.container.task import ARTIFACTS_DIR, Task, load_task

try:
    import anyio
    from inspect_ai.util import (
        ComposeConfig,
        ExecResult,
        OutputLimitExceededError,
        SandboxConnection,
        SandboxEnvironment,
        SandboxEnvironmentConfigType,
        SandboxEnvironmentLimits,
        SandboxUnavailableError,
        sandboxenv,
    )
except ImportError as exc:  # the module is only imported by a caller that has inspect_ai
    raise ExtraNotInstalledError(
        "the cleanroom sandbox for inspect_ai", "inspect", exc.name or "inspect_ai"
    ) from exc

# The sandbox type a task names (`harbor_sealed(sandbox=...)`, ``-T sandbox=cleanroom``).
SANDBOX_NAME = "cleanroom"
# Labels on every container this sandbox starts: the process that started it and the
# inspect task, so that a task's end removes what a cancelled sample start left behind.
RUN_LABEL = "cleanroom.inspect.run"
TASK_LABEL = "cleanroom.inspect.task"
# The log folders Harbor gives the agent, empty and writable by every user.
AGENT_LOGS = "/logs/agent"
VERIFIER_LOGS = "/logs/verifier"
# `exec` with a timeout runs under the container's own `timeout`, which kills the
# command's whole process tree (the daemon cannot stop an exec); the wait on the host
# gives it this much more before giving up on the daemon.
TIMEOUT_KILL_AFTER = "5s"
HOST_SLACK_S = 10.0
# Exit statuses of `timeout`: 124 when the command ended on SIGTERM, 137 on the SIGKILL
# that follows; 143 is BusyBox's SIGTERM.
TIMEOUT_EXITS = (124, 137, 143)
# How a command that never started ends: status 126, and the daemon's words (no such
# user, not executable) or the container's `timeout`'s as all of its output.
NOT_STARTED = 126
NOT_STARTED_WORDS = (b"OCI runtime exec failed", b"unable to find user", b"timeout: failed to run")
# Where `exec`'s standard input is staged, readable by any user, removed afterwards.
INPUT_DIR = "/tmp"

_PROCESS_RUN = uuid.uuid4().hex[:12]
_T = TypeVar("_T")

__all__ = ["SANDBOX_NAME", "CleanroomSandbox", "task_folder"]


def task_folder(config: Any, metadata: dict[str, Any]) -> str:
    """The Harbor task folder a sample runs: the sandbox config when it is a path,
    else the sample's ``task_dir`` (inspect-harbor puts it in every sample's metadata,
    and its compose config in the sandbox spec, which this sandbox does not need)."""
    if isinstance(config, str) and config:
        return config
    found = metadata.get("task_dir")
    if isinstance(found, str) and found:
        return found
    raise ValueError(
        f"the {SANDBOX_NAME} sandbox needs a Harbor task folder: give it as the sandbox "
        "config, or run a sample with task_dir in its metadata (inspect-harbor's)"
    )


@sandboxenv(name=SANDBOX_NAME)
class CleanroomSandbox(SandboxEnvironment):
    """One sample's Harbor task container, started through cleanroom's Docker layer."""

    def __init__(
        self, runtime: DockerRuntime, container: str, workdir: str, workspace: Path
    ) -> None:
        super().__init__()
        self.runtime = runtime
        self.container = container
        self.workdir = workdir
        # The host folder bound at the task's reward folder.
        self.workspace = workspace

    # The sample's life -------------------------------------------------------------

    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, Any],
    ) -> dict[str, SandboxEnvironment]:
        """Build (or reuse) the task's image and start its container idle."""
        folder = task_folder(config, metadata)
        labels = {RUN_LABEL: _PROCESS_RUN, TASK_LABEL: task_name}
        started = await _in_thread(start_task_container, folder, labels)
        return {"default": started}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        """Remove the sample's container, whatever the verification left it as
        (frozen, killed or running)."""
        for environment in environments.values():
            if isinstance(environment, CleanroomSandbox):
                await _in_thread(environment.remove)

    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        """Remove what a sample start cut short by a cancellation left behind: its
        container, started in a worker thread after the sample stopped waiting for it."""
        if cleanup:
            labels = {RUN_LABEL: _PROCESS_RUN, TASK_LABEL: task_name}
            await _in_thread(_remove_labelled, labels)

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> Any:
        """inspect-harbor's compose config, read back from a log (the task folder comes
        from the sample's metadata, so only its shape matters)."""
        return ComposeConfig.model_validate(config)

    def remove(self) -> None:
        """Remove the container, its anonymous volumes and its host folder; gone already
        is fine."""
        try:
            self.runtime.containers.remove(self.container)
        finally:
            self.runtime.docker.close()
            remove_tree(self.workspace)

    # What inspect asks of a sandbox ------------------------------------------------

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        """Run ``cmd`` in the container. A command that times out is killed with its
        process tree and raises `TimeoutError`; it is not run again (``timeout_retry``
        is for a daemon that hangs, and an agent's command is not repeated behind its
        back)."""
        argv = list(cmd)
        staged = await _in_thread(self._stage_input, input) if input is not None else None
        if staged is not None:
            argv = ["/bin/sh", "-c", 'exec 0<"$0" && exec "$@"', staged, *argv]
        if timeout is not None:
            argv = ["/usr/bin/timeout", "-k", TIMEOUT_KILL_AFTER, f"{timeout}s", *argv]
        limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
        run = functools.partial(
            self.runtime.containers.exec,
            self.container,
            argv,
            user=user,
            env=env,
            workdir=self.in_container(cwd) if cwd else self.workdir,
            timeout=None if timeout is None else timeout + HOST_SLACK_S,
            cap=limit + 1,
        )
        try:
            done = await _in_thread(run)
        except RuntimeUnavailable as exc:
            raise SandboxUnavailableError(f"the {SANDBOX_NAME} sandbox: {exc}") from exc
        finally:
            if staged is not None:
                await _in_thread(self._unstage, staged)
        return _exec_result(done, timeout, limit, user)

    async def write_file(self, file: str, contents: str | bytes) -> None:
        """Write a file (root's, mode 0644), making its missing parent folders (0755)."""
        data = contents.encode("utf-8") if isinstance(contents, str) else contents
        try:
            await _in_thread(self._write, self.in_container(file), data)
        except RuntimeUnavailable as exc:
            raise SandboxUnavailableError(f"the {SANDBOX_NAME} sandbox: {exc}") from exc

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        """Read a file through the daemon's archive API, at most inspect's read limit
        (`OutputLimitExceededError` beyond it). A link is followed as a program would
        follow it, once, inside the container's root."""
        if posixpath.basename(file.rstrip("/")) in (".", ".."):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", file)
        limit = SandboxEnvironmentLimits.MAX_READ_FILE_SIZE
        try:
            seen = await _in_thread(self._read, self.in_container(file), limit)
        except RuntimeUnavailable as exc:
            raise SandboxUnavailableError(f"the {SANDBOX_NAME} sandbox: {exc}") from exc
        data = _contents(seen, file)
        return data.decode("utf-8") if text else data

    async def connection(self, *, user: str | None = None) -> SandboxConnection:
        """The container, by ID, whatever its state: the sealed scorer verifies a
        container the agent stopped too (a stopped container is no reason to exclude
        the agent's sample)."""
        login = ["docker", "exec", "-it", *(["--user", user] if user else [])]
        return SandboxConnection(
            type="docker",
            command=shlex.join([*login, self.container, "bash", "-l"]),
            container=self.container,
        )

    def default_polling_interval(self) -> float:
        return 0.2

    # Effects, in a worker thread ----------------------------------------------------

    def in_container(self, path: str) -> str:
        """``path`` in the container: a relative one is under the work dir."""
        return posixpath.normpath(posixpath.join(self.workdir, path))

    def _stage_input(self, data: str | bytes) -> str:
        path = posixpath.join(INPUT_DIR, f".cleanroom-input-{secrets.token_hex(8)}")
        raw = data.encode("utf-8") if isinstance(data, str) else data
        self.runtime.docker.put_archive(
            self.container, INPUT_DIR, _tar_of({}, path, raw, INPUT_DIR)
        )
        return path

    def _unstage(self, path: str) -> None:
        # As root: the command's user may not remove a root-owned file in a sticky /tmp.
        with contextlib.suppress(RuntimeUnavailable):  # gone, and the file with it
            self.runtime.containers.exec(self.container, ["/bin/rm", "-f", "--", path], user="0")

    def _write(self, path: str, data: bytes) -> None:
        docker = self.runtime.docker
        stat = docker.stat_path(self.container, path)
        if stat is not None and kind_of_mode(int(stat.get("mode", 0))) == "directory":
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        missing: list[str] = []
        top = posixpath.dirname(path)
        while (stat := docker.stat_path(self.container, top)) is None:
            missing.append(top)
            top = posixpath.dirname(top)
        if kind_of_mode(int(stat.get("mode", 0))) not in ("directory", "symlink"):
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", top)
        # Only the missing folders are in the archive: one that exists keeps its owner
        # and mode (the daemon would give it the archive's).
        folders = {posixpath.relpath(d, top): 0o755 for d in reversed(missing)}
        docker.put_archive(self.container, top, _tar_of(folders, path, data, top))

    def _read(self, path: str, limit: int) -> ObservedFile:
        seen = self.runtime.files.read(self.container, path, cap=limit)
        if seen.kind is FileKind.SYMLINK and seen.note:
            # The daemon's stat names the link's target resolved in the container's root.
            target = seen.note if seen.note.startswith("/") else posixpath.join("/", seen.note)
            return self.runtime.files.read(self.container, target, cap=limit)
        return seen


def start_task_container(task_dir: str, labels: dict[str, str]) -> CleanroomSandbox:
    """The task's container, started idle as cleanroom starts an agent's for its own
    sealed rollouts, its ``[environment.healthcheck]`` passed; nothing is left behind
    when it cannot be started.

    The reward folder is a host folder bound in, as Harbor binds one: the verification
    finds it among the container's mounts and watches it from the host, so a reward the
    agent planted there is seen without running anything in the container.
    """
    task = load_task(task_dir)
    refuse_unsupported(task)
    envs = resolve_environments(task)
    if isinstance(envs, str):
        raise ValueError(envs)
    runtime = DockerRuntime.connect(labels)
    workspace = Path(tempfile.mkdtemp(prefix="cleanroom-inspect-"))
    container: str | None = None
    try:
        try:
            image, _ = runtime.images.for_task(task)
        except ImageBuildFailed as exc:
            raise RuntimeError(f"the task image {exc.tag} could not be made:\n{exc.log}") from exc
        workdir = task.config.environment.workdir or runtime.images.workdir(image) or "/"
        reward_dir = task.config.verifier.reward_dir
        reward_on_host = workspace / "verifier"
        reward_on_host.mkdir()
        reward_on_host.chmod(0o777)
        # The reward and log folders start empty, whatever the image holds there: what
        # is found in them afterwards is the agent's.
        logs = sorted({reward_dir, VERIFIER_LOGS, AGENT_LOGS, ARTIFACTS_DIR})
        container = runtime.containers.start_agent(
            AgentContainerSpec(
                image,
                Limits.of(task),
                workdir,
                task.name,
                binds={reward_on_host: reward_dir},
                environment=envs.task,
                logs_hidden=logs,
            )
        )
        # Harbor gives the agent these folders writable by every user.
        made = runtime.containers.exec(
            container, ["sh", "-c", 'mkdir -p "$@" && chmod 0777 "$@"', "mkdirs", *logs], user="0"
        )
        if made.exit_code != 0:
            raise RuntimeUnavailable(f"making {logs}: {made.output[-300:]!r}")
        check = task.config.environment.healthcheck
        if check is not None:
            health = check_health(runtime, container, check, workdir, "agent")
            if health.failed:
                raise RuntimeError(f"{task.name}: before the agent phase, {health.failed}")
        return CleanroomSandbox(runtime, container, workdir, workspace)
    except BaseException:
        if container is not None:
            runtime.containers.remove(container)
        runtime.docker.close()
        remove_tree(workspace)
        raise


def refuse_unsupported(task: Task) -> None:
    """Refuse, by name, a task this sandbox would run differently from Harbor."""
    if task.compose is not None:
        raise NotImplementedError(
            f"{task.name}: the {SANDBOX_NAME} sandbox runs a task without compose services; "
            "run tasks with an environment/docker-compose.yaml in inspect's docker sandbox"
        )
    if task.steps:
        raise NotImplementedError(f"{task.name}: multi-step tasks are not supported")


def _exec_result(
    done: CommandResult, timeout: int | None, limit: int, user: str | None
) -> ExecResult[str]:
    """inspect's result of a command, or the exception its contract names."""
    if timeout is not None and (
        done.timed_out
        or done.exit_code == TIMEOUT_EXITS[0]
        or (done.exit_code in TIMEOUT_EXITS and done.seconds >= timeout)
    ):
        raise TimeoutError(f"Command timed out after {timeout} seconds")
    if done.exit_code is None:
        raise SandboxUnavailableError(f"the daemon did not say how the command ended ({done})")
    if done.exit_code == NOT_STARTED and done.output.startswith(NOT_STARTED_WORDS):
        said = done.output.decode("utf-8", errors="replace").strip()
        if "permission denied" in said.lower():
            raise PermissionError(said)
        return ExecResult(False, NOT_STARTED, "", said)
    if done.exit_code == NOT_STARTED and not done.output:
        # The daemon's words can be lost on a busy machine; say what is known.
        who = f" as user {user}" if user else ""
        return ExecResult(False, NOT_STARTED, "", f"the command could not be started{who}")
    stdout = done.stdout.decode("utf-8", errors="replace")
    stderr = done.stderr.decode("utf-8", errors="replace")
    if len(done.stdout) > limit or len(done.stderr) > limit:
        kept = done.stdout[:limit] if len(done.stdout) > limit else done.stderr[:limit]
        raise OutputLimitExceededError(
            SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR,
            kept.decode("utf-8", errors="replace"),
        )
    return ExecResult(done.exit_code == 0, done.exit_code, stdout, stderr)


def _contents(seen: ObservedFile, asked: str) -> bytes:
    """A file's bytes, or the exception inspect's ``read_file`` names for what is there."""
    if seen.kind is FileKind.REGULAR:
        return seen.data
    if seen.kind is FileKind.MISSING:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", asked)
    if seen.kind is FileKind.OVERSIZE:
        raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, None)
    if seen.note == "directory":
        raise IsADirectoryError(errno.EISDIR, "Is a directory", asked)
    raise OSError(f"{asked}: not a regular file ({seen.kind.value} {seen.note})".strip())


def _tar_of(folders: dict[str, int], path: str, data: bytes, top: str) -> bytes:
    """A root-owned archive, relative to ``top``, of ``folders`` (by mode) and the file."""
    buf = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, mode in folders.items():
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, now
            tar.addfile(info)
        info = tarfile.TarInfo(posixpath.relpath(path, top))
        info.size, info.mode, info.mtime = len(data), 0o644, now
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _remove_labelled(labels: dict[str, str]) -> None:
    runtime = DockerRuntime.connect(labels)
    try:
        runtime.remove_labelled(labels, images=False)
    finally:
        runtime.docker.close()


async def _in_thread(call: Callable[..., _T], *args: Any) -> _T:
    """Run a blocking call of the Docker layer off the event loop."""
    return await anyio.to_thread.run_sync(functools.partial(call, *args))
