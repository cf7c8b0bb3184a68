"""OSWorld's getters: how the evaluator reads the state a metric scores.

Each getter takes the run's context and the getter's config object, as OSWorld's
``get_<type>(env, config)`` does, and lives in the module of its family: `core` (commands,
rules and files), `relative_time`, `app_config` (VLC, GIMP, the video player),
`chrome_profile` (Chrome's profile files), `chrome_tabs` (the running Chrome's tabs, over
its DevTools port), `slides` (media in a presentation) and
`desktop_files` (folders, shortcuts, the wallpaper), `accessibility` (the desktop's
accessibility tree) and `vlc_status` (VLC's web interface). `GETTERS` is the one
registry; `NOT_IMPLEMENTED` names the getters the task set uses that cleanroom refuses,
each with the reason a user reads.

Where OSWorld would return None because a command or download failed to run, getters raise
(`GetterFailed`, `GuestTimeout`, `GuestError`) so the evaluator can mark the rollout
invalid instead of scoring a 0. A file the agent was to leave that is missing, or that
cannot be read where OSWorld's getter crashes (`UnreadableResult`), raises
`FileNotFoundError`, which scores 0.
"""

from __future__ import annotations

from cleanroom.verifiers.osworld.getters.accessibility import get_accessibility_tree
from cleanroom.verifiers.osworld.getters.app_config import (
    get_default_video_player,
    get_gimp_config_file,
    get_vlc_config,
)
from cleanroom.verifiers.osworld.getters.chrome_profile import CHROME_PROFILE_GETTERS
from cleanroom.verifiers.osworld.getters.chrome_tabs import CHROME_TAB_GETTERS
from cleanroom.verifiers.osworld.getters.core import (
    Getter,
    GetterContext,
    GetterFailed,
    UnreadableResult,
    get_cache_file,
    get_cloud_file,
    get_rule,
    get_vm_command_error,
    get_vm_command_line,
    get_vm_file,
)
from cleanroom.verifiers.osworld.getters.desktop_files import (
    get_list_directory,
    get_shortcuts_on_desktop,
    get_vm_wallpaper,
)
from cleanroom.verifiers.osworld.getters.relative_time import get_rule_relativeTime
from cleanroom.verifiers.osworld.getters.slides import (
    get_audio_in_slide,
    get_background_image_in_slide,
)
from cleanroom.verifiers.osworld.getters.vlc_status import get_vlc_playing_info

__all__ = [
    "GETTERS",
    "NOT_IMPLEMENTED",
    "Getter",
    "GetterContext",
    "GetterFailed",
    "UnreadableResult",
    "get_cache_file",
    "get_cloud_file",
    "get_rule",
    "get_vm_command_error",
    "get_vm_command_line",
    "get_vm_file",
]

GETTERS: dict[str, Getter] = {
    "vm_command_line": get_vm_command_line,
    "vm_command_error": get_vm_command_error,
    "rule": get_rule,
    "rule_relativeTime": get_rule_relativeTime,
    "vm_file": get_vm_file,
    "cache_file": get_cache_file,
    "cloud_file": get_cloud_file,
    "vlc_config": get_vlc_config,
    "vlc_playing_info": get_vlc_playing_info,
    "gimp_config_file": get_gimp_config_file,
    "default_video_player": get_default_video_player,
    "list_directory": get_list_directory,
    "shortcuts_on_desktop": get_shortcuts_on_desktop,
    "vm_wallpaper": get_vm_wallpaper,
    "audio_in_slide": get_audio_in_slide,
    "background_image_in_slide": get_background_image_in_slide,
    "accessibility_tree": get_accessibility_tree,
    **CHROME_PROFILE_GETTERS,
    **CHROME_TAB_GETTERS,
}
"""Every getter cleanroom implements, by its OSWorld type name."""

_LIVE_SITE = (
    "scripts a browser through pages of a live web site (clicks, waits for the site's "
    "elements); offline there is no such site, so the task is refused, never scored"
)

NOT_IMPLEMENTED: dict[str, str] = {
    "googledrive_file": "needs a live Google Drive account (OSWorld signs in with its own "
    "credentials); refused, never scored",
    "info_from_website": _LIVE_SITE,
    "gotoRecreationPage_and_get_html_content": _LIVE_SITE,
    "vm_terminal_output": "OSWorld reads the text of the focused GNOME Terminal from the "
    "accessibility tree (its gnome-terminal-server application); the environment's "
    "terminal is xterm, which publishes no accessibility tree, so the text it shows "
    "cannot be read as OSWorld reads it",
    "vm_screen_size": "asks the desktop session for its screen size",
    "vm_window_size": "asks the desktop session for an application window's size",
    "vscode_config": "types into VS Code's command palette, and VS Code is not packaged "
    "for Debian, so no environment here has it",
    "content_from_vm_file": "reads a spreadsheet with pandas' read_excel, whose value "
    "conversions cleanroom does not re-implement",
    "chrome_appearance_mode_ui": "OSWorld's desktop-env 1.0.2 has no such getter (the task "
    "crashes there), so there is nothing to be identical to",
}
"""Getter types the task set uses that cleanroom does not implement, and why."""
