"""OSWorld's getters of application settings: VLC's and GIMP's config files, and the
default video player the desktop's MIME tables name.

OSWorld asks its VM for the home folder through a Python command first; here the guest's
home is known, so the paths are read directly (``~`` is the guest user's home).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from cleanroom.verifiers.osworld.cached_file import CachedFile
from cleanroom.verifiers.osworld.getters.core import (
    GetterContext,
    GetterFailed,
    cache_write,
    output_or_none,
    run_command,
)

VLC_CONFIG = "~/.config/vlc/vlcrc"
GIMP_CONFIG_FOLDER = "~/.config/GIMP/2.10"

# OSWorld's list, duplicates kept: each one is a query, and the most frequent answer wins.
VIDEO_TYPES = (
    *("3gp", "3gp", "3gpp", "3gpp", "3gpp2", "3gpp2", "avi", "avi", "divx", "divx", "dv", "dv"),
    *("fli", "fli", "flv", "flv", "mp2t", "mp2t", "mp4", "mp4", "mp4v-es", "mp4v-es"),
    *("mpeg", "mpeg", "mpeg-system", "mpeg-system", "msvideo", "msvideo", "ogg", "ogg"),
    *("quicktime", "quicktime", "vnd.divx", "vnd.divx", "vnd.mpegurl", "vnd.mpegurl"),
    *("vnd.rn-realvideo", "vnd.rn-realvideo", "webm", "webm", "x-anim", "x-anim"),
    *("x-avi", "x-avi", "x-flc", "x-flc", "x-fli", "x-fli", "x-flv", "x-flv", "x-m4v", "x-m4v"),
    *("x-matroska", "x-matroska", "x-mpeg", "x-mpeg", "x-mpeg-system", "x-mpeg-system"),
    *("x-mpeg2", "x-mpeg2", "x-ms-asf", "x-ms-asf", "x-ms-asf-plugin", "x-ms-asf-plugin"),
    *("x-ms-asx", "x-ms-asx", "x-ms-wm", "x-ms-wm", "x-ms-wmv", "x-ms-wmv", "x-ms-wmx"),
    *("x-ms-wmx", "x-ms-wvx", "x-ms-wvx", "x-msvideo", "x-msvideo", "x-nsv", "x-nsv"),
    *("x-ogm", "x-ogm", "x-ogm+ogg", "x-theora", "x-theora", "x-theora+ogg", "x-theora+ogg"),
)


def _dest(config: dict[str, Any], getter: str) -> str:
    dest = config.get("dest")
    if not isinstance(dest, str):
        raise GetterFailed(f"{getter} needs a 'dest'")
    return dest


def get_vlc_config(ctx: GetterContext, config: dict[str, Any]) -> CachedFile:
    """VLC's ``vlcrc``, copied to ``dest``; a missing one raises `FileNotFoundError`
    (OSWorld's getter crashes on it)."""
    dest = _dest(config, "vlc_config")
    return cache_write(ctx, dest, ctx.guest.read_file(VLC_CONFIG))


def get_gimp_config_file(ctx: GetterContext, config: dict[str, Any]) -> CachedFile | None:
    """GIMP 2.10's config file ``file_name``, copied to ``dest``; None when it is empty,
    as in OSWorld; a missing one raises `FileNotFoundError` (OSWorld gives None, which its
    metric scores 0)."""
    name = config.get("file_name")
    if not isinstance(name, str):
        raise GetterFailed("gimp_config_file needs a 'file_name'")
    dest = _dest(config, "gimp_config_file")
    data = ctx.guest.read_file(f"{GIMP_CONFIG_FOLDER}/{name}")
    if not data:
        return None
    return cache_write(ctx, dest, data)


def get_default_video_player(ctx: GetterContext, config: dict[str, Any]) -> str:
    """The desktop file ``xdg-mime`` names most often as the default for OSWorld's video
    types (with its newline, as the command prints it), or ``unknown``."""
    answers: list[str] = []
    for kind in VIDEO_TYPES:
        result = run_command(ctx, {"command": ["xdg-mime", "query", "default", f"video/{kind}"]})
        answer = output_or_none(result.stdout, result.stderr)
        if answer:
            answers.append(answer)
    if not answers:
        return "unknown"
    return Counter(answers).most_common(1)[0][0]
