"""The warmed LibreOffice profile is made once per LibreOffice and settings: a second
template copies the kept one instead of starting LibreOffice, and a cache entry is used
only when it is whole."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from cleanroom.environments.session import template as tpl


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every LibreOffice start, faked: it writes the profile's settings file as LibreOffice does."""
    seen: list[list[str]] = []

    def fake_run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        seen.append(argv)
        profile = Path(argv[1].split("file://", 1)[1])
        (profile / "user").mkdir(parents=True, exist_ok=True)
        (profile / "user" / "registrymodifications.xcu").write_text("<warmed/>")
        return subprocess.CompletedProcess(argv, 0, b"", b"")

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(tpl, "profile_key", lambda: "k1")
    return seen


def test_a_second_template_copies_the_kept_profile_without_starting_libreoffice(
    tmp_path: Path, starts: list[list[str]]
) -> None:
    cache = tmp_path / "cache"
    first, second = tpl.build_template(tmp_path / "a"), tpl.build_template(tmp_path / "b")
    tpl.warm_libreoffice_profile(first, cache=cache)
    tpl.warm_libreoffice_profile(second, cache=cache)
    assert len(starts) == 1
    settings = second / tpl.LIBREOFFICE_PROFILE / "user" / "registrymodifications.xcu"
    assert settings.read_text() == "<warmed/>"
    assert [p.name for p in cache.iterdir()] == ["k1"]  # no partial copy left beside it


def test_an_unfinished_cache_entry_is_not_used(tmp_path: Path, starts: list[list[str]]) -> None:
    cache = tmp_path / "cache"
    (cache / "k1" / "user").mkdir(parents=True)  # no settings file: a copy cut short
    tpl.warm_libreoffice_profile(tpl.build_template(tmp_path / "a"), cache=cache)
    assert len(starts) == 1


def test_without_a_cache_every_template_is_warmed(tmp_path: Path, starts: list[list[str]]) -> None:
    for name in ("a", "b"):
        tpl.warm_libreoffice_profile(tpl.build_template(tmp_path / name), cache=None)
    assert len(starts) == 2


def test_the_key_changes_with_the_settings_and_the_libreoffice_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "soffice").touch()
    binary = tmp_path / "soffice.bin"
    binary.write_bytes(b"build 1")
    monkeypatch.setattr(tpl.shutil, "which", lambda name: str(tmp_path / name))
    first = tpl.profile_key()
    binary.write_bytes(b"build 22")  # another LibreOffice
    second = tpl.profile_key()
    monkeypatch.setattr(tpl, "libreoffice_settings", lambda: "<other/>")
    assert len({first, second, tpl.profile_key()}) == 3
    monkeypatch.setattr(tpl.shutil, "which", lambda name: None)
    assert tpl.profile_key() == ""  # no LibreOffice: nothing is kept
