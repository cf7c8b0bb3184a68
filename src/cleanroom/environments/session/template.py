"""The home template every environment's home is restored from.

It holds the desktop folders, an empty Writer document that Writer opens (so saving it
needs no dialog), a LibreOffice profile with autocorrection off (so typed tokens reach
the document exactly as typed), a browser profile past its first-run screens, and the
settings OSWorld's VM gives the apps its tasks launch (`apps.write_home_settings`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from cleanroom.core.odt import empty_odt
from cleanroom.environments.apps import write_home_settings
from cleanroom.environments.interface import DESKTOP_SKELETON, DOCUMENT

# The folders a fresh desktop account has (xdg-user-dirs), as on OSWorld's VM user.
LIBREOFFICE_PROFILE = ".config/cleanroom-libreoffice"
BROWSER_PROFILE = ".config/cleanroom-chromium"

# Writer must not rewrite what is typed: no capitals at sentence start, no dash or quote
# replacement, no word completion, no URL recognition, no first-run tips.
_LO_SETTINGS = (
    ("/org.openoffice.Office.Writer/AutoFunction/Format/ByInput", "Enable", "false"),
    ("/org.openoffice.Office.Writer/AutoFunction/Completion", "Enable", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "CapitalAtStartSentence", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "TwoCapitalsAtStart", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "ChangeDash", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "UseReplacementTable", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "SetInetAttribute", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "ReplaceSingleQuote", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "ReplaceDoubleQuote", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "CorrectAccidentalCapsLock", "false"),
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "false"),
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "AutoSave", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "WarnAlienFormat", "false"),
    ("/org.openoffice.Office.Recovery/AutoSave", "Enabled", "false"),
)


def libreoffice_settings() -> str:
    """The ``registrymodifications.xcu`` a fresh profile starts with."""
    items = "\n".join(
        f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse">'
        f"<value>{value}</value></prop></item>"
        for path, name, value in _LO_SETTINGS
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<oor:items xmlns:oor="http://openoffice.org/2001/registry"'
        ' xmlns:xs="http://www.w3.org/2001/XMLSchema"'
        ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        f"{items}\n</oor:items>\n"
    )


def build_template(root: Path) -> Path:
    """Write the home template at ``root`` (replacing any old one) and return it."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for name in DESKTOP_SKELETON:
        (root / name).mkdir()
    (root / DOCUMENT).write_bytes(empty_odt())
    lo_user = root / LIBREOFFICE_PROFILE / "user"
    lo_user.mkdir(parents=True)
    (lo_user / "registrymodifications.xcu").write_text(libreoffice_settings())
    browser = root / BROWSER_PROFILE
    browser.mkdir(parents=True)
    (browser / "First Run").touch()
    (root / ".bashrc").write_text("PS1='$ '\n")
    write_home_settings(root)
    root.chmod(0o755)
    return root


# A warmed profile depends only on LibreOffice's build and the settings above: once made
# it is kept here, under a key of both, and later pools copy it instead of warming their
# own (a Writer start that every pool start would otherwise wait for).
PROFILE_CACHE = Path("/var/lib/cleanroom/cache/libreoffice-profile")


def warm_libreoffice_profile(
    template: Path, *, timeout_s: float = 60.0, cache: Path | None = PROFILE_CACHE
) -> None:
    """Let LibreOffice initialise the template's profile once, headless, so that every
    environment's Writer starts from a finished profile instead of building one; or copy
    the one ``cache`` keeps for this LibreOffice and these settings."""
    import subprocess

    profile = (template / LIBREOFFICE_PROFILE).resolve()
    key = profile_key()
    cached = cache / key if cache is not None and key else None
    if cached is not None and _finished(cached):
        shutil.rmtree(profile, ignore_errors=True)
        shutil.copytree(cached, profile, symlinks=True)
        return
    proc = subprocess.run(
        [
            "soffice",
            f"-env:UserInstallation=file://{profile}",
            "--headless",
            "--terminate_after_init",
            "--norestore",
        ],
        capture_output=True,
        timeout=timeout_s,
        check=False,
        start_new_session=True,
    )
    if proc.returncode != 0 or not _finished(profile):
        from cleanroom.environments.errors import StartError

        raise StartError(f"LibreOffice could not initialise its profile: {proc.stderr!r}")
    if cached is not None:
        _keep(profile, cached)


def profile_key() -> str:
    """What a warmed profile depends on: the settings and the LibreOffice binary (its size
    and time); empty when no LibreOffice is installed."""
    import hashlib

    found = shutil.which("soffice")
    if found is None:
        return ""
    binary = Path(found).resolve().with_name("soffice.bin")
    try:
        st = binary.stat()
    except OSError:
        return ""
    seed = f"{libreoffice_settings()}\n{binary}\n{st.st_size}\n{st.st_mtime_ns}"
    return hashlib.sha256(seed.encode()).hexdigest()[:16]


def _finished(profile: Path) -> bool:
    return (profile / "user" / "registrymodifications.xcu").is_file()


def _keep(profile: Path, cached: Path) -> None:
    # Copied beside the cache entry, then renamed into place: a reader sees all of it or
    # nothing, and of two pools warming at once the first rename wins.
    import os
    import threading

    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f".{cached.name}.{os.getpid()}.{threading.get_ident()}")
    shutil.copytree(profile, partial, symlinks=True)
    try:
        partial.rename(cached)
    except OSError:  # another pool kept one first
        shutil.rmtree(partial, ignore_errors=True)


_NO_LOCKS = (
    '<item oor:path="/org.openoffice.Office.Common/Misc">'
    '<prop oor:name="UseDocumentOOoLockFile" oor:op="fuse"><value>false</value></prop></item>\n'
    '<item oor:path="/org.openoffice.Office.Common/Misc">'
    '<prop oor:name="UseDocumentSystemFileLocking" oor:op="fuse"><value>false</value></prop>'
    "</item>\n"
)


def without_document_locks(settings: str) -> str:
    """A profile's ``registrymodifications.xcu`` with document locking turned off, for a
    second Writer that must open a document another Writer holds (the shared-home leak)."""
    if "</oor:items>" not in settings:
        raise ValueError("not a LibreOffice registrymodifications.xcu")
    return settings.replace("</oor:items>", _NO_LOCKS + "</oor:items>", 1)
