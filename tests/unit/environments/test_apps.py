"""The apps OSWorld's tasks launch: the same packages on the host and in the desktop image,
Chrome's names for Chromium, and the settings a home starts with."""

from __future__ import annotations

import configparser
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cleanroom.environments import apps
from cleanroom.environments.containers import desktop_image
from cleanroom.environments.session.template import build_template

SETUP = Path(__file__).parents[3] / "scripts" / "setup.sh"


def setup_packages() -> set[str]:
    found = re.search(r"^PACKAGES=\((.*?)^\)", SETUP.read_text(), re.S | re.M)
    assert found, "scripts/setup.sh has no PACKAGES list"
    return set(found.group(1).split())


def test_the_host_installs_every_app_package_the_image_has() -> None:
    assert set(apps.PACKAGES) - setup_packages() == set()


def test_the_desktop_image_installs_every_app_package() -> None:
    assert set(apps.PACKAGES) <= set(desktop_image.PACKAGES)


def test_a_changed_chrome_stand_in_names_another_image(monkeypatch: pytest.MonkeyPatch) -> None:
    before = desktop_image.definition_hash("sha256:base")
    monkeypatch.setattr(apps, "GOOGLE_CHROME", apps.GOOGLE_CHROME + "# changed\n")
    assert desktop_image.definition_hash("sha256:base") != before


def test_the_chrome_stand_in_runs_chromium_on_chromes_profile_with_the_callers_arguments(
    tmp_path: Path,
) -> None:
    # Given a Chromium that prints what it was started with
    fake = tmp_path / "chromium"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    fake.chmod(0o755)
    script = apps.GOOGLE_CHROME.replace("/usr/bin/chromium", str(fake))
    # When a task starts Chrome with its DevTools port
    done = subprocess.run(
        ["/bin/sh", "-c", script, "google-chrome", "--remote-debugging-port=1337"],
        env={"HOME": "/home/someone", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    argv = done.stdout.splitlines()
    # Then Chromium runs on Chrome's profile folder, with the port last
    assert "--user-data-dir=/home/someone/.config/google-chrome" in argv
    assert argv[-1] == "--remote-debugging-port=1337"


def test_install_writes_every_chrome_name_once(tmp_path: Path) -> None:
    assert [p.name for p in apps.install_chrome(tmp_path)] == list(apps.CHROME_NAMES)
    assert apps.install_chrome(tmp_path) == []
    for name in apps.CHROME_NAMES:
        assert (tmp_path / name).read_text() == apps.GOOGLE_CHROME
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o755


def test_a_home_starts_with_vlcs_web_interface_on_and_osworlds_password(tmp_path: Path) -> None:
    home = build_template(tmp_path / "template")
    vlcrc = configparser.ConfigParser()
    vlcrc.read(home / apps.VLC_SETTINGS_PATH)
    assert vlcrc["core"]["extraintf"] == "http"
    assert vlcrc["core"]["http-port"] == "8080"
    assert vlcrc["lua"]["http-password"] == "password"


def test_a_homes_sound_server_starts_from_the_systems_settings_with_its_sink_at_half(
    tmp_path: Path,
) -> None:
    home = build_template(tmp_path / "template")
    lines = (home / apps.PULSE_SETTINGS_PATH).read_text().splitlines()
    assert lines[0] == ".include /etc/pulse/default.pa"
    assert lines[-1] == "set-sink-volume @DEFAULT_SINK@ 32768"


def test_a_home_opens_every_video_type_the_getter_asks_about_in_totem(tmp_path: Path) -> None:
    from cleanroom.verifiers.osworld.getters.app_config import VIDEO_TYPES

    home = build_template(tmp_path / "template")
    mimeapps = configparser.ConfigParser(delimiters=("=",))
    mimeapps.optionxform = str  # type: ignore[assignment,method-assign]
    mimeapps.read(home / apps.MIME_APPS_PATH)
    defaults = mimeapps["Default Applications"]
    assert {defaults[f"video/{kind}"] for kind in VIDEO_TYPES} == {"org.gnome.Totem.desktop"}


def test_a_homes_libreoffice_profile_starts_with_the_tip_of_the_day_off_and_nothing_else(
    tmp_path: Path,
) -> None:
    home = build_template(tmp_path / "template")
    root = ET.parse(home / apps.LIBREOFFICE_SETTINGS_PATH).getroot()
    oor = "{http://openoffice.org/2001/registry}"
    settings = [
        (item.get(f"{oor}path"), prop.get(f"{oor}name"), prop.findtext("value"))
        for item in root.iter("item")
        for prop in item.iter("prop")
    ]
    # Anything more would be a setting OSWorld's VM does not have, and some checkers read
    # this file.
    assert settings == [("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "false")]
