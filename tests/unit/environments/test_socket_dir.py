"""The displays' socket folder is made sticky and writable by all whatever the umask, and
one that is not a folder of root's is refused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cleanroom.environments.errors import StartError
from cleanroom.environments.x11 import display


@pytest.fixture
def socket_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / ".X11-unix"
    monkeypatch.setattr(display, "SOCKET_DIR", path)
    return path


@pytest.mark.skipif(os.geteuid() != 0, reason="the folder is root's")
def test_a_new_folder_is_sticky_and_open_to_all_under_the_usual_umask(socket_dir: Path) -> None:
    old = os.umask(0o022)
    try:
        display.ensure_socket_dir()
    finally:
        os.umask(old)
    assert stat.S_IMODE(socket_dir.stat().st_mode) == 0o1777


@pytest.mark.skipif(os.geteuid() != 0, reason="the folder is root's")
def test_a_folder_left_with_the_wrong_mode_is_set_right(socket_dir: Path) -> None:
    socket_dir.mkdir(mode=0o755)
    display.ensure_socket_dir()
    assert stat.S_IMODE(socket_dir.stat().st_mode) == 0o1777


def test_a_link_in_its_place_is_refused(socket_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    socket_dir.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StartError):
        display.ensure_socket_dir()
    assert stat.S_IMODE((tmp_path / "elsewhere").stat().st_mode) == 0o700
