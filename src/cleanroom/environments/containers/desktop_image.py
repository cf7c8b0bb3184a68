"""The image an environment's programs run in when the pool uses containers.

It is built locally from the base image (no registry is reachable; apt inside the build
container reaches Debian's mirror) and tagged with a hash of its definition and of the
base image it starts from, so an edit to either means a new image and an unchanged
definition is never rebuilt.

``python -m cleanroom.environments.containers.desktop_image`` builds it unless it exists and
prints its tag; with ``--check`` it only says whether it exists (setup runs both).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

from cleanroom.docker_layer import Docker, DockerError, ImageBuildFailed
from cleanroom.environments import apps
from cleanroom.environments.errors import PoolError

BASE_IMAGE = "cleanroom/base:bookworm"
REPOSITORY = "cleanroom/desktop"
LABEL = "cleanroom.desktop-image"
_BUILD_TIMEOUT_S = 1800
_LOG_TAIL_CHARS = 3000

# The security and updates suites too, so the programs in the container are the same
# versions as the host's (the template's LibreOffice profile is warmed by the host's).
# The system Python with the X library pyautogui drives a display with, under the name
# OSWorld's tasks call it by: OSWorld's pyautogui action space and its tasks' setup steps
# run code in the environment, where its programs run. Then the apps OSWorld's tasks
# launch (`apps.PACKAGES`).
PACKAGES = (
    "libreoffice-writer",
    "libreoffice-gtk3",
    "chromium",
    "xterm",
    "dbus",
    "at-spi2-core",
    "fonts-dejavu-core",
    "python3",
    "python3-xlib",
    "python-is-python3",
    *apps.PACKAGES,
)
# pyautogui and pytweening (pure Python, not packaged by Debian), which `make setup`
# installs on the host at these versions: copied into the build from there (no package
# index is reached from the build); another version means another image.
PYAUTOGUI_DIR = Path("/opt/cleanroom/pyautogui")
PYAUTOGUI_VERSIONS = "pyautogui==0.9.54 pytweening==1.2.0"
DEFINITION = f"""\
FROM {BASE_IMAGE}
RUN printf '%s\\n' \\
      'deb http://deb.debian.org/debian bookworm main' \\
      'deb http://deb.debian.org/debian bookworm-updates main' \\
      'deb http://deb.debian.org/debian-security bookworm-security main' \\
      > /etc/apt/sources.list \\
 && apt-get update -q \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \\
      {" ".join(PACKAGES)} \\
 && apt-get clean && rm -rf /var/lib/apt/lists/*
# Chrome's names for Chromium; the container is Chromium's sandbox (it has no network, no
# capabilities and only its environment's files), and Chromium's own needs user
# namespaces, which Docker's seccomp profile refuses to a process without capabilities.
COPY google-chrome /usr/local/bin/google-chrome
RUN ln -s google-chrome /usr/local/bin/google-chrome-stable \\
 && echo 'export CHROMIUM_FLAGS="$CHROMIUM_FLAGS --no-sandbox"' > /etc/chromium.d/no-sandbox
# {PYAUTOGUI_VERSIONS}
COPY pyautogui {PYAUTOGUI_DIR}
RUN chmod -R a+rX {PYAUTOGUI_DIR} \\
 && site="$(python3 -c 'import site; print(site.getsitepackages()[0])')" \\
 && mkdir -p "$site" && echo {PYAUTOGUI_DIR} > "$site/cleanroom-pyautogui.pth"
"""


class DockerUnavailable(PoolError, DockerError):
    """The Docker daemon could not be reached, or refused a call; says which call."""


class DesktopImageBuildFailed(PoolError):
    """The desktop image did not build; carries the end of the build log."""

    def __init__(self, tag: str, log: str) -> None:
        self.tag = tag
        self.log = log
        super().__init__(f"the desktop image {tag} did not build:\n{log}")


def docker_client() -> Docker:
    """A connection to the local daemon whose every failure is `DockerUnavailable`
    (also when it does not answer)."""
    try:
        return Docker.connect(300, error=DockerUnavailable)
    except DockerUnavailable as exc:
        raise DockerUnavailable(f"{exc}; start it with `make setup`") from exc


def definition_hash(base_image_id: str) -> str:
    """The hash naming an image built from ``DEFINITION`` on top of ``base_image_id``."""
    seed = f"{base_image_id}\n{DEFINITION}\n{apps.GOOGLE_CHROME}"
    return hashlib.sha256(seed.encode()).hexdigest()[:16]


def image_tag(client: Docker) -> str:
    """The tag the current definition builds to (the base image must exist)."""
    base = client.inspect_image(BASE_IMAGE)
    if base is None:
        raise DockerUnavailable(
            f"the base image {BASE_IMAGE} is missing; build it with `make setup`"
        )
    return f"{REPOSITORY}:{definition_hash(base['Id'])}"


def ensure_image(client: Docker | None = None) -> str:
    """The desktop image's tag, building the image first if it does not exist yet."""
    client = client or docker_client()
    existing = image_exists(client)
    if existing is not None:
        return existing
    tag = image_tag(client)
    if not (PYAUTOGUI_DIR / "pyautogui" / "__init__.py").is_file():
        raise DesktopImageBuildFailed(tag, f"{PYAUTOGUI_DIR} has no pyautogui: run `make setup`")
    with tempfile.TemporaryDirectory(prefix="cleanroom-desktop-image-") as context:
        (Path(context) / "Dockerfile").write_text(DEFINITION)
        chrome = Path(context) / "google-chrome"
        chrome.write_text(apps.GOOGLE_CHROME)
        chrome.chmod(0o755)
        shutil.copytree(PYAUTOGUI_DIR, Path(context) / "pyautogui", symlinks=True)
        try:
            client.build_image(
                tag,
                path=context,
                labels={LABEL: "1"},
                timeout=_BUILD_TIMEOUT_S,
                log_chars=_LOG_TAIL_CHARS,
            )
        except ImageBuildFailed as exc:
            raise DesktopImageBuildFailed(tag, exc.log) from exc
    return tag


def image_exists(client: Docker) -> str | None:
    """The current definition's tag if that image exists, else None."""
    tag = image_tag(client)
    return tag if client.inspect_image(tag) is not None else None


def main(argv: list[str] | None = None) -> int:
    """Build the image unless it exists and print its tag; with ``--check`` only look:
    print the tag and exit 0 if it exists, exit 1 if not."""
    args = sys.argv[1:] if argv is None else argv
    try:
        if "--check" in args:
            tag = image_exists(docker_client())
            if tag is None:
                return 1
            print(tag)
        else:
            print(ensure_image())
    except PoolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
