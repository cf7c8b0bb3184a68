"""The apps OSWorld's tasks launch start in a pool environment of both modes, each by the
task's own ``launch`` step, and are really up: a window of the app's class on the
environment's display, VLC's web interface answering OSWorld's password, Chrome's
DevTools answering on the port the tasks forward, Thunderbird on the profile a task
unpacked; then a reset ends them. The settings and the sound server the ``os`` tasks
read answer as the tasks read them.

One pool per mode with one environment that starts nothing of its own (the apps are
lazy: only a task's step starts one); each app is started alone and reset away, so the
environment's cores are its own while it starts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from cleanroom.environments.actions import Focus, Hotkey
from cleanroom.environments.apps import CHROME_PROFILE, VLC_HTTP_PASSWORD, VLC_HTTP_PORT
from cleanroom.environments.interface import WindowInfo
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.guests.base import to_argv
from cleanroom.lifecycle import wait_until
from cleanroom.verifiers.osworld.commands import guest_command

from .conftest import require_desktop_stack
from .test_containers_mode import require_docker

pytestmark = [pytest.mark.slow, pytest.mark.beside_desktops]

ENV = "env01"
# The pool's own needs and the apps' commands on the host (the sandbox mode runs them from
# there; the containers mode's image has its own).
STACK = (
    *("Xvfb", "xauth", "dbus-daemon", "xterm", "useradd"),
    *("libreoffice", "gimp", "vlc", "thunderbird", "google-chrome", "socat"),
    *("gsettings", "pulseaudio", "pactl"),
)
START_WITHIN_S = 120.0  # GIMP's and Thunderbird's first start in a fresh home, on 2 cores
# A fresh profile's "Tip of the Day" shows within half a second of the template dialog
# closing; ten times that is a wait it would not outlast.
TIP_WITHIN_S = 5.0
CONFIGS = {
    "sandbox": PoolConfig(envs=1, programs=(), canary_programs=("terminal",)),
    "containers": PoolConfig(envs=1, programs=(), canary_programs=("terminal",), containers=True),
}

# A Thunderbird profile as OSWorld's tasks unpack one into the home: the profiles list
# and one profile, with a preference only this profile has.
_THUNDERBIRD_PROFILE = """
import pathlib
root = pathlib.Path.home() / ".thunderbird"
(root / "t.default-release").mkdir(parents=True)
(root / "profiles.ini").write_text(
    "[Profile0]\\nName=default-release\\nIsRelative=1\\nPath=t.default-release\\nDefault=1\\n\\n"
    "[General]\\nStartWithLastProfile=1\\nVersion=2\\n"
)
(root / "t.default-release" / "prefs.js").write_text(
    'user_pref("mail.shell.checkDefaultClient", false);\\n'
    'user_pref("cleanroom.test.profile", "unpacked");\\n'
)
"""
_FETCH = """
import base64, sys, urllib.request
request = urllib.request.Request(sys.argv[1])
if len(sys.argv) > 2:
    request.add_header("Authorization", "Basic " + base64.b64encode(sys.argv[2].encode()).decode())
try:
    with urllib.request.urlopen(request, timeout=5) as answer:
        print(answer.status)
        print(answer.read().decode(errors="replace"))
except Exception as exc:
    print(getattr(exc, "code", type(exc).__name__))
"""


@dataclass(frozen=True)
class App:
    """One app as OSWorld's tasks start it: their ``launch`` steps, verbatim, and the
    class and a part of the title of the main window it shows (past any splash screen)."""

    name: str
    steps: tuple[dict[str, object], ...]
    window_class: str
    title: str
    prepare: str | None = None  # Python run in the environment first, as the user


APPS = (
    App("calc", ({"command": ["libreoffice", "--calc"]},), "libreoffice-calc", "LibreOffice Calc"),
    App(
        "impress",
        ({"command": ["libreoffice", "--impress"]},),
        "libreoffice-impress",
        "LibreOffice Impress",
    ),
    App("gimp", ({"command": "gimp"},), "gimp", "GNU Image Manipulation Program"),
    App(
        "vlc",
        ({"command": "VLC_VERBOSE=-1 vlc --no-audio --no-video-title-show", "shell": True},),
        "vlc",
        "VLC media player",
    ),
    App(
        "thunderbird",
        ({"command": "/usr/bin/thunderbird"},),
        "thunderbird-default",  # Debian's build's class (OSWorld's VM shows "thunderbird")
        "Mozilla Thunderbird",
        prepare=_THUNDERBIRD_PROFILE,
    ),
    App(
        "chrome",
        (
            {"command": ["google-chrome", "--remote-debugging-port=1337"]},
            {"command": "socat tcp-listen:9222,fork tcp:localhost:1337"},
        ),
        "google-chrome",
        "Chromium",  # the title is Chromium's own ("about:blank - Chromium")
    ),
)


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sandbox"),
        # The apps in containers mode: in `make test-integrations` (the mode itself is in
        # every run, test_containers_mode.py).
        pytest.param("containers", marks=[pytest.mark.docker, pytest.mark.integrations]),
    ],
)
def pool(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pool]:
    """One environment that starts no program of its own, in one of the two modes."""
    require_desktop_stack(STACK)
    if request.param == "containers":
        require_docker().close()
    p = Pool(CONFIGS[request.param], tmp_path_factory.mktemp(f"{request.param}-apps"))
    p.start()
    try:
        yield p
    finally:
        p.stop()


def launch_argv(step: dict[str, object], home: str) -> list[str]:
    """The argv OSWorld's ``launch`` step runs (`setup_steps.run_launch`): a string
    without ``shell`` split on whitespace, one with it handed to ``/bin/sh -c``."""
    raw = step["command"]
    shell = bool(step.get("shell", False))
    if isinstance(raw, str) and not shell:
        raw = raw.split()
    command, use_shell = guest_command(raw, shell, home)
    return to_argv(command, shell=use_shell)


def run(pool: Pool, argv: list[str], timeout_s: float = 60.0) -> tuple[int, str]:
    result = pool.run_inside(ENV, argv, timeout_s)
    return result.code, result.output


def python(pool: Pool, code: str, *args: str) -> str:
    code_, output = run(pool, [pool.python(ENV), "-c", code, *args])
    assert code_ == 0, output
    return output


def app_windows(pool: Pool, app: App) -> list[WindowInfo] | None:
    """The app's windows on the environment's display; None when there is none."""
    return [w for w in pool.env(ENV).windows() if w.wm_class.lower() == app.window_class] or None


def main_window(pool: Pool, app: App) -> WindowInfo | None:
    return next((w for w in app_windows(pool, app) or () if app.title in w.title), None)


def fetch(pool: Pool, url: str, credentials: str | None = None) -> tuple[str, str]:
    """The status and body of ``url`` as a program in the environment gets it."""
    args = [url] if credentials is None else [url, credentials]
    status, _, body = python(pool, _FETCH, *args).partition("\n")
    return status.strip(), body


def answers(pool: Pool, url: str, credentials: str | None = None) -> str | None:
    status, body = fetch(pool, url, credentials)
    return body if status == "200" else None


@pytest.mark.parametrize("app", APPS, ids=[a.name for a in APPS])
def test_an_app_started_as_osworld_starts_it_is_up_and_a_reset_ends_it(
    pool: Pool, app: App
) -> None:
    home = pool.env(ENV).account.home
    if app.prepare:
        python(pool, app.prepare)
    started = [
        pool.start_inside(ENV, launch_argv(step, str(home)), f"{app.name}-{i}")[0]
        for i, step in enumerate(app.steps)
    ]

    shown = wait_until(lambda: main_window(pool, app), START_WITHIN_S, 0.25)
    assert shown, f"no {app.window_class} window; windows: {pool.env(ENV).windows()}"

    if app.name == "vlc":
        status_url = f"http://127.0.0.1:{VLC_HTTP_PORT}/requests/status.xml"
        body = wait_until(lambda: answers(pool, status_url, f":{VLC_HTTP_PASSWORD}"), 30, 0.25)
        assert body is not None and "<root>" in body
        assert fetch(pool, status_url, ":not-the-password")[0] == "401"
    if app.name == "chrome":
        for port in (1337, 9222):  # Chrome's own port, and socat's forward of it
            version = wait_until(
                lambda port=port: answers(pool, f"http://127.0.0.1:{port}/json/version"), 30, 0.25
            )
            assert version is not None and "webSocketDebuggerUrl" in json.loads(version)
        assert pool.stat_home_file(ENV, f"{CHROME_PROFILE}/Default") is not None
    if app.name == "thunderbird":
        # Thunderbird writes its start-up records into the profile it runs on.
        assert wait_until(
            lambda: pool.stat_home_file(ENV, ".thunderbird/t.default-release/times.json"),
            30,
            0.25,
        )

    pool.reset(ENV)

    assert app_windows(pool, app) is None
    assert all(s.poll() is not None for s in started)
    assert pool.stat_home_file(ENV, ".thunderbird") is None  # the home is the template's


def titled(pool: Pool, part: str) -> WindowInfo | None:
    return next((w for w in pool.env(ENV).windows() if part in w.title), None)


def test_impress_started_as_osworld_starts_it_shows_no_tip_of_the_day_after_its_templates(
    pool: Pool,
) -> None:
    """As on OSWorld's VM, whose LibreOffice has started before: the template dialog, and
    once it is closed nothing more, so the keys a task's setup sends next reach Impress."""
    [impress] = [a for a in APPS if a.name == "impress"]
    home = pool.env(ENV).account.home
    pool.start_inside(ENV, launch_argv(impress.steps[0], str(home)), "impress-tips")
    templates = wait_until(lambda: titled(pool, "Select a Template"), START_WITHIN_S, 0.25)
    assert templates, f"no template dialog; windows: {pool.env(ENV).windows()}"

    pool.harness_act(ENV, Focus("focus", window_id=templates.id))
    pool.harness_act(ENV, Hotkey("hotkey", "Escape"))
    assert wait_until(lambda: titled(pool, "Select a Template") is None, 30, 0.25)

    assert wait_until(lambda: titled(pool, "Tip of the Day"), TIP_WITHIN_S, 0.25) is None
    assert main_window(pool, impress) is not None
    pool.reset(ENV)


def test_settings_the_os_tasks_read_are_the_environments_own_and_a_reset_restores_them(
    pool: Pool,
) -> None:
    key = ["org.gnome.desktop.interface", "text-scaling-factor"]
    assert run(pool, ["gsettings", "get", *key]) == (0, "1.0\n")

    assert run(pool, ["gsettings", "set", *key, "1.5"])[0] == 0
    assert run(pool, ["gsettings", "get", *key]) == (0, "1.5\n")
    for schema, name in (
        ("org.gnome.shell", "favorite-apps"),
        ("org.gnome.settings-daemon.plugins.power", "idle-dim"),
        ("org.gnome.desktop.a11y.magnifier", "mag-factor"),
        ("org.gnome.desktop.screensaver", "lock-enabled"),
        ("org.gnome.desktop.notifications", "show-banners"),
    ):
        code, output = run(pool, ["gsettings", "get", schema, name])
        assert code == 0, f"{schema} {name}: {output}"

    pool.reset(ENV)

    assert run(pool, ["gsettings", "get", *key]) == (0, "1.0\n")


def test_the_sound_server_answers_the_volume_task_s_own_command(pool: Pool) -> None:
    # The command of the os task that turns the volume up, as its checker runs it.
    command = (
        "pulseaudio --start\n"
        "pactl list sinks | grep '^[[:space:]]Volume:' | head -n 1 | awk '{print $5}'"
        " | sed 's/%//g'"
    )
    code, output = run(pool, ["/bin/sh", "-c", command])
    assert code == 0 and output.strip().isdigit(), output

    pool.reset(ENV)

    # The server ended with the generation, and none starts until a client asks again.
    assert run(pool, ["pulseaudio", "--check"])[0] != 0
