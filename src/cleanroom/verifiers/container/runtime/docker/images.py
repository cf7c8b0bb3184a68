"""Task images on a Docker daemon: built from a task's ``environment/`` (or a compose
service's ``build``) once per content, or pulled when named.

The tag carries a hash of every file of the build context, so an edit means a new image;
two rollouts asking for the same tag at once build it once. An image that does not build
from its definition is `ImageBuildFailed` with the end of its log.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from cleanroom.docker_layer import Docker, ImageBuildFailed
from cleanroom.verifiers.container.runtime.docker.made import MadeByRuntime
from cleanroom.verifiers.container.runtime.docker.tar import (
    environment_hash,
    kind_of_mode,
    only_the_folder,
    safe_name,
)
from cleanroom.verifiers.container.runtime.records import RuntimeUnavailable
from cleanroom.verifiers.container.task import Task, rewrite_base_images
from cleanroom.verifiers.container.task.compose_model import Service

IMAGE_REPOSITORY = "cleanroom-task"
# The names cleanroom gives the images its spare verifier's containers run.
SPARE_REPOSITORY = "cleanroom-spare"
KEEPALIVE = ("sleep", "infinity")
BUILD_LOG_SHOWN = 4000

# Long work a person waits for is told on this logger (a command shows it on stderr).
PROGRESS = logging.getLogger("cleanroom.progress")

_build_locks: dict[str, threading.Lock] = {}
_image_logs: dict[str, bytes | None] = {}
_build_locks_guard = threading.Lock()


class DockerImages:
    """The task images of one Docker connection; everything made carries ``labels``."""

    def __init__(
        self, docker: Docker, labels: Mapping[str, str], made: MadeByRuntime | None = None
    ) -> None:
        self.docker = docker
        self.labels = dict(labels)
        self.made = made or MadeByRuntime()

    def for_task(self, task: Task, image_map: Mapping[str, str] | None = None) -> tuple[str, bool]:
        """The task's image tag, built unless an image for this ``environment/`` exists.

        Returns the tag and whether it was built now. The tag carries a hash of every
        file in ``environment/`` (names, modes, contents), so an edit means a new image.
        ``image_map`` rewrites base images (``FROM`` lines) before the build; a task with
        no Dockerfile uses its ``docker_image`` (mapped too), pulled if it is not here.
        """
        mapping = dict(image_map or {})
        timeout = task.config.environment.build_timeout_sec
        if task.dockerfile is None:
            named = task.config.environment.docker_image
            assert named is not None  # load_task requires a Dockerfile or docker_image
            return self._prebuilt(named, mapping), False
        return self._built(task.name, task.environment_dir, "Dockerfile", (), mapping, timeout)

    def for_verifier(
        self, task: Task, image_map: Mapping[str, str] | None = None
    ) -> tuple[str, bool]:
        """The image a separate verifier runs in (`Task.verifier_environment`), built or
        pulled as `for_task` does; the task's own image when that is where it runs."""
        found = task.verifier_environment()
        assert found is not None  # only asked of a task with a separate verifier
        mapping = dict(image_map or {})
        if found.build_dir == task.environment_dir or (
            found.build_dir is None and not found.bundled_tests
        ):
            return self.for_task(task, mapping)
        if found.build_dir is None:
            assert found.image is not None  # a bundled image is named
            return self._prebuilt(found.image, mapping), False
        name = f"{task.name}-verifier"
        timeout = found.config.build_timeout_sec
        return self._built(name, found.build_dir, "Dockerfile", (), mapping, timeout)

    def for_service(
        self, task: Task, service: Service, image_map: Mapping[str, str] | None = None
    ) -> str:
        """A compose service's image: its ``build`` made (or reused) as the task's own
        image is, with the same image map; else its ``image``, pulled when not here."""
        mapping = dict(image_map or {})
        if service.build is None:
            assert service.image is not None  # the compose parser requires one of them
            return self._prebuilt(service.image, mapping)
        build = service.build
        timeout = task.config.environment.build_timeout_sec
        name = f"{task.name}-{service.name}"
        return self._built(name, build.context, build.dockerfile, build.args, mapping, timeout)[0]

    def _built(
        self,
        name: str,
        folder: Path,
        dockerfile: str,
        args: Sequence[tuple[str, str]],
        image_map: Mapping[str, str],
        timeout: float,
    ) -> tuple[str, bool]:
        with contextlib.ExitStack() as stack:
            context = folder
            original = (folder / dockerfile).read_text(encoding="utf-8")
            rewritten = rewrite_base_images(original, dict(image_map))
            if rewritten != original:
                context = Path(stack.enter_context(tempfile.TemporaryDirectory()))
                context = Path(shutil.copytree(folder, context / folder.name))
                (context / dockerfile).write_text(rewritten, encoding="utf-8")
            digest = environment_hash(context)
            if dockerfile != "Dockerfile" or args:
                extra = f"{digest} {dockerfile} {sorted(args)}".encode()
                digest = hashlib.sha256(extra).hexdigest()[:16]
            tag = f"{IMAGE_REPOSITORY}/{safe_name(name)}:{digest}"
            with _build_locks_guard:
                lock = _build_locks.setdefault(tag, threading.Lock())
            with lock:
                if self.docker.inspect_image(tag) is not None:
                    return tag, False
                PROGRESS.info("building the image %s (its first use; later runs reuse it)", tag)
                started = time.monotonic()
                self._build(tag, context, dockerfile, dict(args), timeout)
                PROGRESS.info("built %s in %.1f s", tag, time.monotonic() - started)
                return tag, True

    def _prebuilt(self, named: str, image_map: Mapping[str, str]) -> str:
        image = image_map.get(named, named)
        if self.docker.inspect_image(image) is None:
            try:
                self.docker.pull_image(image)
            except RuntimeUnavailable as exc:
                if exc.status is not None and 400 <= exc.status < 500:
                    raise ImageBuildFailed(image, f"docker_image {image}: {exc}") from exc
                raise
        return image

    def logs(self, image: str) -> bytes | None:
        """What the image holds under ``/logs``, as a tar whose top member is ``logs``,
        or None when it holds nothing there. The agent's ``/logs`` is a tmpfs that hides
        it, so the agent container gets a copy (`DockerContainers.start_agent`)."""
        with _build_locks_guard:
            if image in _image_logs:
                return _image_logs[image]
        with self.made.making(f"reading {image}'s /logs"):
            created = self.docker.create_container(
                image, KEEPALIVE, network_disabled=True, labels=self.labels
            )
            self.made.container(created)
        try:
            try:
                chunks, info = self.docker.get_archive(created, "/logs")
            except RuntimeUnavailable as exc:
                if exc.status != 404:
                    raise
                found = None
            else:
                data = b"".join(chunks)
                found = data if kind_of_mode(int(info.get("mode", 0))) == "directory" else None
                if found is not None and only_the_folder(found):
                    found = None
        finally:
            self.docker.remove_container(created, volumes=True)
            self.made.removed_container(created)
        with _build_locks_guard:
            _image_logs[image] = found
        return found

    def workdir(self, image: str) -> str | None:
        """The image's own working folder (its Dockerfile's last ``WORKDIR``), if any."""
        attrs = self.docker.inspect_image(image)
        if attrs is None:
            raise RuntimeUnavailable(f"inspecting image {image}: not found")
        config = attrs.get("Config") or {}
        return config.get("WorkingDir") or None

    def _build(
        self, tag: str, context: Path, dockerfile: str, args: Mapping[str, str], timeout: float
    ) -> None:
        """`ImageBuildFailed` when the task's definition is at fault: a failed step, or a
        request the daemon refused as bad (4xx)."""
        try:
            self.docker.build_image(
                tag,
                path=str(context),
                labels=self.labels,
                timeout=int(timeout),
                log_chars=BUILD_LOG_SHOWN,
                dockerfile=dockerfile,
                buildargs=args,
            )
        except RuntimeUnavailable as exc:
            if exc.status is not None and 400 <= exc.status < 500:
                raise ImageBuildFailed(tag, str(exc)[-BUILD_LOG_SHOWN:]) from exc
            raise

    def remove(self, image: str) -> None:
        """Remove an image; missing is fine."""
        self.docker.remove_image(image)

    def content_of(self, image: str) -> str:
        """What makes a container of ``image`` what it is, as one digest: its layers and
        its configuration but for its labels (Compose builds each project's image anew,
        the same but for the labels it adds, under another id)."""
        attrs = self.docker.inspect_image(image)
        if attrs is None:
            raise RuntimeUnavailable(f"inspecting image {image}: not found")
        config = {
            k: v
            for k, v in (attrs.get("Config") or {}).items()
            if k not in ("Labels", "Image", "Hostname", "Domainname")
        }
        made = {
            "layers": (attrs.get("RootFS") or {}).get("Layers") or [],
            "config": config,
            "platform": [attrs.get("Os"), attrs.get("Architecture")],
        }
        return hashlib.sha256(json.dumps(made, sort_keys=True).encode()).hexdigest()

    def keep_for_spares(self, image: str, content: str) -> str:
        """A name of cleanroom's for ``image`` (whose `content_of` is ``content``), so
        that a spare verifier's container of it neither keeps its owner from removing its
        own name nor loses its image when it does."""
        reference = f"{SPARE_REPOSITORY}:{content[:40]}"
        self.docker.tag_image(image, reference)
        return reference
