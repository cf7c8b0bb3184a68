"""Where cleanroom's OSWorld metrics and getters differ from OSWorld's on purpose.

The differential tests let a case disagree only under one of these names, and only in
the narrow situation the name describes; test_differences.py shows each one happening
and checks that docs/verifiers/osworld-differences.md lists exactly these, word for word.
"""

from __future__ import annotations

DELIBERATE: dict[str, str] = {
    "check_gnome_favorite_apps: output that is no Python literal": (
        "OSWorld parses the gsettings output with `eval()`, which would run any Python an "
        "agent put there inside the verifier; cleanroom uses `ast.literal_eval`, which "
        "reads the same lists and refuses anything else (`invalid`)."
    ),
    "text metrics: a result file that is not UTF-8": (
        "check_list, check_csv, diff_text_file, compare_text_file and compare_config read "
        "the result file as UTF-8 text; where OSWorld's `open()` raises "
        "`UnicodeDecodeError` and the evaluation stops without a score, cleanroom scores "
        "0: what the agent left is never a reason for `invalid`."
    ),
    "check_json: the spreadsheet_range rule": (
        "A rule method OSWorld has for spreadsheet cell ranges (openpyxl) and cleanroom "
        "does not implement: a check_json rule using it is `invalid` rather than scored."
    ),
    "vm_command_line, vm_command_error: a command that cannot start": (
        "A program that does not exist, or an empty command: OSWorld's server answers 500 "
        "and the getter gives None (the metric then scores it, mostly 0); cleanroom makes "
        "the rollout `invalid`, since the fault is the task's or the machine's."
    ),
    "vm_command_line, vm_command_error: the time limit": (
        "A command past the limit (120 s in both): OSWorld's getter gives None; cleanroom "
        "makes the rollout `invalid`."
    ),
    "vm_file: a missing file (not multi)": (
        "OSWorld gives the metric None; cleanroom's getter raises `FileNotFoundError` and "
        "the evaluator scores a missing result 0 without calling the metric. The score is "
        "the same: every file metric cleanroom has scores a None result 0 in OSWorld "
        "(tested). A missing expected file is `invalid`, where OSWorld's metric crashes."
    ),
    "vm_file: a symbolic link": (
        "OSWorld's server follows links; cleanroom never follows a link the agent left in "
        "the home (it could point at the reference answer), so the path holds no file: 0."
    ),
    "vm_file: a path with $VARIABLES": (
        "OSWorld's server expands environment variables in the path; cleanroom reads the "
        "path as written (it does not know the desktop session's environment), so the "
        "file is not found: 0. None of the tasks in tests/data/osworld uses one."
    ),
    "vm_file: a dest OSWorld cannot write": (
        "A dest in a sub-folder the task cache does not have, or naming the cache folder "
        "itself: OSWorld cannot open it and gives None; cleanroom makes the rollout "
        "`invalid` (the task is broken, not the agent)."
    ),
    "vm_file, cloud_file, cache_file: a name outside the task cache": (
        "An absolute dest or path, or one with `..`: OSWorld writes or reads there; "
        "cleanroom refuses to leave the task's cache folder (`invalid`)."
    ),
    "vm_file, cloud_file: multi lists of different lengths": (
        "OSWorld pairs paths and dests up to the shorter list; cleanroom takes the task as "
        "broken (`invalid`)."
    ),
    "vm_file: two getters with one dest": (
        "OSWorld hands metrics paths, so a metric reads a cache file as the last getter "
        "to write it left it; cleanroom hands them the bytes each getter fetched."
    ),
    "cloud_file: a 2xx answer other than 200": (
        "OSWorld keeps the body of any successful answer (an empty one for 204); "
        "cleanroom takes only 200 as the reference file and makes the rollout `invalid`."
    ),
    "rule_relativeTime: rules without a timezone": (
        "OSWorld asks a web service (ipapi.co) for the time zone of its harness's address "
        "and takes UTC when that fails; cleanroom makes no network request and takes UTC. "
        "Near midnight an online OSWorld can expect another day."
    ),
    "vlc_config: a missing vlcrc": (
        "OSWorld's getter crashes writing None to the cache, and the evaluation stops "
        "without a score; cleanroom raises `FileNotFoundError`: a VLC whose settings were "
        "never saved scores 0."
    ),
    "vlc_playing_info: nothing answers on VLC's web interface": (
        "The agent closed VLC (or it never started): OSWorld's request raises "
        "`ConnectionError` and the evaluation stops without a score; cleanroom scores 0 "
        "as a missing result. So does a status over 1 MB or one not whole within 30 s, "
        "which OSWorld would wait for without a limit."
    ),
    "gimp_config_file: a missing config file": (
        "OSWorld gives None, which its metric scores 0; cleanroom's getter raises "
        "`FileNotFoundError`, which scores 0 without calling the metric. The score is the "
        "same."
    ),
    "Chrome profile getters, vlc_config, gimp_config_file, shortcuts_on_desktop, "
    "vm_wallpaper: a symbolic link": (
        "OSWorld's server follows a link the agent left in the home (Preferences, "
        "Bookmarks, History, Cookies, vlcrc, a GIMP config file, a .desktop shortcut, the "
        "wallpaper); cleanroom never does (it could point at a reference answer), so the "
        "file counts as missing: the value OSWorld gives for a missing file, or 0."
    ),
    "list_directory: a symbolic link to a folder": (
        "OSWorld's server lists the folder a link points to as a folder of the tree; "
        "cleanroom lists the link as a file entry and follows no link."
    ),
    "list_directory: a path that is no folder": (
        "OSWorld's server answers 400 and the getter gives None, on which its metric "
        "(check_moved_jpgs) crashes; cleanroom raises `FileNotFoundError`: a folder the "
        "agent was to fill and that is not there scores 0."
    ),
    "shortcuts_on_desktop: a desktop folder or shortcut that cannot be read": (
        "No ~/Desktop, or a .desktop entry that is a folder or not UTF-8: OSWorld's getter "
        "crashes and the evaluation stops without a score; cleanroom scores 0."
    ),
    "default_video_player: xdg-mime cannot start": (
        "OSWorld's server answers 500 for each query and the getter gives 'unknown'; "
        "cleanroom makes the rollout `invalid`, since the machine lacks the tool."
    ),
    "vm_wallpaper: a wallpaper file that cannot be read": (
        "A picture-uri naming no readable file (missing, a folder, URL-escaped, empty): "
        "OSWorld hands its metric an empty file; cleanroom raises `FileNotFoundError`, "
        "which scores 0."
    ),
    "vm_wallpaper: gsettings fails": (
        "OSWorld hands its metric an empty file; cleanroom makes the rollout `invalid`, "
        "since the desktop's settings could not be read."
    ),
    "bookmarks: a Bookmarks file that is no JSON object": (
        "OSWorld's getter crashes and the evaluation stops without a score; cleanroom "
        "scores 0: what the agent left is never a reason for `invalid`."
    ),
    "history, cookie_data: a config without dest": (
        "OSWorld's getter catches the missing key and gives None; cleanroom takes the task "
        "as broken (`invalid`)."
    ),
    "audio_in_slide, background_image_in_slide: a presentation that is missing or cannot be read": (
        "A missing .pptx, no zip, broken XML, a relationship without a type or pointing at "
        "no member: OSWorld's getter crashes and the evaluation stops without a score; "
        "cleanroom scores 0."
    ),
    "audio_in_slide, background_image_in_slide: a linked file missing or outside the home": (
        "A file:// target the guest does not have gives OSWorld's metric None, and cleanroom "
        "raises `FileNotFoundError` (0) as for `vm_file`; one outside the user's home, which "
        "OSWorld reads on its VM, cleanroom does not read at all (on a local guest it would "
        "be a file of the checker's machine): 0."
    ),
}
"""Each deliberate difference: its name (``metric_or_getter: case``) and why."""
