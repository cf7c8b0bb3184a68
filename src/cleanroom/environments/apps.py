"""The desktop applications OSWorld's tasks launch, under the names they launch them by.

They come from Debian packages (`PACKAGES`): on the host for the sandbox mode (the
environments' programs run from the host's files; ``scripts/setup.sh`` installs them) and
in the desktop image for the containers mode. None of them starts with the pool: a
task's own ``launch`` step starts what it needs, and a reset ends it with the rest of
the environment's processes.

Two are not Debian's. Google Chrome is played by Chromium under Chrome's names
(``google-chrome``, ``google-chrome-stable``) with Chrome's profile folder, so a task's
``google-chrome --remote-debugging-port=1337`` and the getters that read
``~/.config/google-chrome`` find what they expect. VS Code has no Debian package and is
not here.

``python -m cleanroom.environments.apps BIN_DIR`` writes the Chrome stand-in into
``BIN_DIR`` (setup runs it for the host; the desktop image copies the same text).
"""

from __future__ import annotations

import sys
from pathlib import Path

# What OSWorld's tasks start and read, beside the Writer, Chromium and xterm every pool
# has: the office suite's other two programs, the image editor (with the theme engine its
# themes are drawn with, as Ubuntu installs it), the media player, the
# mail client; socat, which the Chrome tasks forward the DevTools port with; the GNOME
# settings schemas the ``os`` tasks read with ``gsettings`` (the desktop's, the shell's
# favourite apps, the power plugin's) and dconf, which keeps a user's settings in their
# home; the sound server and ``pactl``, which a volume task reads; ``bc`` and ``jq``,
# which checkers and setup steps pipe through.
PACKAGES = (
    "libreoffice-calc",
    "libreoffice-impress",
    "gimp",
    "gtk2-engines-pixbuf",
    "vlc",
    "totem",
    "thunderbird",
    "socat",
    "libglib2.0-bin",
    "gsettings-desktop-schemas",
    "gnome-shell-common",
    "gnome-settings-daemon-common",
    "dconf-gsettings-backend",
    "dconf-service",
    "pulseaudio",
    "pulseaudio-utils",
    "bc",
    "jq",
)

# What the apps' processes need in their environment. Thunderbird gives each installation
# a profile of its own unless told to start on the profile that ``profiles.ini`` names as
# the default: the one a task unpacks into ``~/.thunderbird``, whatever installation
# made it.
ENVIRONMENT = {"MOZ_LEGACY_PROFILES": "1"}

# Chrome's own profile folder, which OSWorld's Chrome getters read.
CHROME_PROFILE = ".config/google-chrome"
CHROME_NAMES = ("google-chrome", "google-chrome-stable")
# Chromium's wrapper reads its flags from /etc/chromium.d, which is where a container adds
# --no-sandbox; the user's own arguments (the DevTools port, URLs) come after these.
GOOGLE_CHROME = f"""\
#!/bin/sh
# Google Chrome as OSWorld's tasks launch it, played by Chromium: Chrome's profile
# folder and window class, past the first-run screens, passwords kept without a
# keyring; every argument (--remote-debugging-port=1337, URLs) is passed on.
exec /usr/bin/chromium --user-data-dir="$HOME/{CHROME_PROFILE}" --class=Google-chrome \\
  --no-first-run --no-default-browser-check --password-store=basic "$@"
"""

# VLC's settings as OSWorld's VM has them: its web interface on (port 8080, the password
# OSWorld's getter sends), and no question about network access at the first start.
VLC_SETTINGS_PATH = ".config/vlc/vlcrc"
VLC_HTTP_PORT = 8080
VLC_HTTP_PASSWORD = "password"
VLC_SETTINGS = f"""\
[core]
extraintf=http
http-port={VLC_HTTP_PORT}

[lua]
http-password={VLC_HTTP_PASSWORD}

[qt]
qt-privacy-ask=0
"""


# The settings of the LibreOffice that tasks launch (``libreoffice --impress``, with its
# default profile, not the pool's own Writer's) as OSWorld's VM has them: a profile that
# has started before, so no "Tip of the Day" dialog. A fresh profile shows that dialog
# at its first start, a moment after the template dialog closes; it takes the keys a
# task's setup sends next (ef9d12bd's F10 and arrows end on its OK button, and the
# slide pane it meant to close stays open). Only this key: every other setting keeps
# LibreOffice's default, as on OSWorld's VM, where checkers read some of them from this
# very file (EnablePresenterScreen, AutoSaveTimeIntervall, the default fonts).
LIBREOFFICE_SETTINGS_PATH = ".config/libreoffice/4/user/registrymodifications.xcu"
LIBREOFFICE_SETTINGS = """\
<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" \
xmlns:xs="http://www.w3.org/2001/XMLSchema" \
xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" \
oor:op="fuse"><value>false</value></prop></item>
</oor:items>
"""


# The sound server's settings: the system's, then its sink at half volume. With no sound
# card the server's only sink is the null sink, which starts at 100%; a desktop's starts
# lower, and a task that asks for the volume at its maximum must have something to do.
PULSE_SETTINGS_PATH = ".config/pulse/default.pa"
SINK_VOLUME = 0x8000  # half of PulseAudio's 100% (0x10000)
PULSE_SETTINGS = f""".include /etc/pulse/default.pa
set-sink-volume @DEFAULT_SINK@ {SINK_VOLUME}
"""

# The default apps as GNOME on Ubuntu has them: videos open in Totem (GNOME Videos).
MIME_APPS_PATH = ".config/mimeapps.list"
VIDEO_PLAYER = "org.gnome.Totem.desktop"
# The video types OSWorld's default_video_player getter asks ``xdg-mime`` about, all of
# which GNOME gives Totem.
VIDEO_TYPES = (
    "3gp",
    "3gpp",
    "3gpp2",
    "avi",
    "divx",
    "dv",
    "fli",
    "flv",
    "mp2t",
    "mp4",
    "mp4v-es",
    "mpeg",
    "mpeg-system",
    "msvideo",
    "ogg",
    "quicktime",
    "vnd.divx",
    "vnd.mpegurl",
    "vnd.rn-realvideo",
    "webm",
    "x-anim",
    "x-avi",
    "x-flc",
    "x-fli",
    "x-flv",
    "x-m4v",
    "x-matroska",
    "x-mpeg",
    "x-mpeg-system",
    "x-mpeg2",
    "x-ms-asf",
    "x-ms-asf-plugin",
    "x-ms-asx",
    "x-ms-wm",
    "x-ms-wmv",
    "x-ms-wmx",
    "x-ms-wvx",
    "x-msvideo",
    "x-nsv",
    "x-ogm",
    "x-ogm+ogg",
    "x-theora",
    "x-theora+ogg",
)
MIME_APPS = "[Default Applications]\n" + "".join(
    f"video/{kind}={VIDEO_PLAYER}\n" for kind in VIDEO_TYPES
)


def write_home_settings(home: Path) -> None:
    """Put the apps' settings into a home (the template every home is restored from)."""
    for relative, text in (
        (VLC_SETTINGS_PATH, VLC_SETTINGS),
        (PULSE_SETTINGS_PATH, PULSE_SETTINGS),
        (MIME_APPS_PATH, MIME_APPS),
        (LIBREOFFICE_SETTINGS_PATH, LIBREOFFICE_SETTINGS),
    ):
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def install_chrome(bin_dir: Path) -> list[Path]:
    """Write the Chrome stand-in under each of Chrome's names into ``bin_dir``, leaving
    a name alone when it already holds this text; the paths written."""
    written = []
    for name in CHROME_NAMES:
        path = bin_dir / name
        try:
            current = path.read_text()
        except (OSError, UnicodeDecodeError):
            current = None
        if current != GOOGLE_CHROME:
            path.unlink(missing_ok=True)
            path.write_text(GOOGLE_CHROME)
            written.append(path)
        path.chmod(0o755)
    return written


def main(argv: list[str] | None = None) -> int:
    """Install the Chrome stand-in into the folder named by the only argument."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m cleanroom.environments.apps BIN_DIR", file=sys.stderr)
        return 2
    for path in install_chrome(Path(args[0])):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
