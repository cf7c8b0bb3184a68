"""Which of OSWorld's metrics cleanroom calls from desktop-env itself (pure table).

`metrics.METRICS` holds the metrics cleanroom re-implements as pure functions; every other
metric that OSWorld-Verified's tasks use is called from PyPI's ``desktop-env`` in the
checker environment (`checker_env`), identical by construction. `REFUSED` names the ones
that cannot run here, with the reason a user reads.
"""

from __future__ import annotations

from cleanroom.core.outcomes import Cause
from cleanroom.verifiers.osworld.checker_env import (
    MetricAnswer,
    OwnMetric,
    Raised,
    Returned,
    ReturnedOther,
    Stopped,
)

DESKTOP_ENV_VERSION = "1.0.2"

# Each metric by the module of desktop_env/evaluators/metrics its package imports it from.
_MODULES: dict[str, str] = {
    # chrome.py
    "check_font_size": "chrome",
    "check_history_deleted": "chrome",
    "compare_archive": "chrome",
    "compare_htmls": "chrome",
    "compare_pdf_images": "chrome",
    "compare_pdfs": "chrome",
    "is_added_to_steam_cart": "chrome",
    "is_cookie_deleted": "chrome",
    "is_expected_active_tab": "chrome",
    "is_expected_active_tab_approximate": "chrome",
    "is_expected_bookmarks": "chrome",
    "is_expected_installed_extensions": "chrome",
    "is_expected_search_query": "chrome",
    "is_expected_tabs": "chrome",
    "is_expected_url_pattern_match": "chrome",
    "is_shortcut_on_desktop": "chrome",
    # docs.py
    "check_highlighted_words": "docs",
    "check_italic_font_size_14": "docs",
    "check_tabstops": "docs",
    "compare_docx_files": "docs",
    "compare_docx_files_and_ignore_new_lines": "docs",
    "compare_docx_images": "docs",
    "compare_docx_tables": "docs",
    "compare_font_names": "docs",
    "compare_line_spacing": "docs",
    "compare_references": "docs",
    "compare_subscript_contains": "docs",
    "compare_unique_train_records": "docs",
    "contains_page_break": "docs",
    "evaluate_colored_words_in_tables": "docs",
    "evaluate_strike_through_last_paragraph": "docs",
    "find_default_font": "docs",
    "has_page_numbers_in_footers": "docs",
    "is_first_line_centered": "docs",
    # general.py
    "check_accessibility_tree": "general",
    "check_line_number": "general",
    "compare_python_pure_text": "general",
    "file_contains": "general",
    "fuzzy_place_math": "general",
    "run_sqlite3": "general",
    # gimp.py
    "check_brightness_decrease_and_structure_sim": "gimp",
    "check_config_status": "gimp",
    "check_contrast_increase_and_structure_sim": "gimp",
    "check_file_exists_and_structure_sim": "gimp",
    "check_green_background": "gimp",
    "check_image_file_size": "gimp",
    "check_image_mirror": "gimp",
    "check_palette_and_structure_sim": "gimp",
    "check_saturation_increase_and_structure_sim": "gimp",
    "check_structure_sim": "gimp",
    "check_structure_sim_resized": "gimp",
    "check_textbox_on_leftside": "gimp",
    "check_triangle_position": "gimp",
    "compare_image_list": "gimp",
    # others.py
    "check_mp3_meta": "others",
    "compare_epub": "others",
    # pdf.py
    "check_pdf_pages": "pdf",
    # slides.py
    "check_auto_saving_time": "slides",
    "check_image_stretch_and_center": "slides",
    "check_left_panel": "slides",
    "check_page_number_colors": "slides",
    "check_presenter_console_disable": "slides",
    "check_slide_orientation_Portrait": "slides",
    "check_transition": "slides",
    "compare_pptx_files": "slides",
    "evaluate_presentation_fill_to_rgb_distance": "slides",
    # table.py
    "compare_conference_city_in_order": "table",
    "compare_table": "table",
    # thunderbird.py
    "check_thunderbird_filter": "thunderbird",
    "check_thunderbird_folder": "thunderbird",
    "check_thunderbird_prefs": "thunderbird",
    # vlc.py
    "check_global_key_play_pause": "vlc",
    "check_one_instance_when_started_from_file": "vlc",
    "check_qt_bgcone": "vlc",
    "check_qt_max_volume": "vlc",
    "check_qt_minimal_view": "vlc",
    "check_qt_slider_colours": "vlc",
    "compare_audios": "vlc",
    "compare_images": "vlc",
    "compare_videos": "vlc",
    "is_vlc_fullscreen": "vlc",
    "is_vlc_playing": "vlc",
    "is_vlc_recordings_folder": "vlc",
    # vscode.py
    "check_json_keybindings": "vscode",
    "check_json_settings": "vscode",
    "check_python_file_by_test_suite": "vscode",
    "compare_result_files": "vscode",
    "compare_zip_files": "vscode",
}

OWN_METRICS: dict[str, OwnMetric] = {
    name: OwnMetric(name, module) for name, module in _MODULES.items()
}
"""OSWorld's metrics that run from desktop-env, by name."""

REFUSED: dict[str, str] = {
    "compare_image_text": (
        "reads text with easyocr, whose torch stack the checker environment leaves out"
    ),
    "check_play_and_exit": f"is newer than desktop-env {DESKTOP_ENV_VERSION}",
    "check_structure_sim_with_threshold": f"is newer than desktop-env {DESKTOP_ENV_VERSION}",
}
"""Metrics OSWorld-Verified uses that cleanroom cannot run, and why."""


TRUSTED_GETTERS = frozenset({"rule", "rule_relativeTime", "cloud_file"})
"""Expected getters whose value the agent cannot touch: the task's own rules and
downloaded reference files. A metric that fails on one of these alone is the checker's
fault; an expected value read from the environment is the agent's state like the result."""


def blame_of(answer: MetricAnswer, *, self_checked: bool) -> Cause | None:
    """Who caused a metric call's answer: None for a number, else the agent or the
    infrastructure.

    A call is the agent's when the metric raised, ran out of CPU, memory or file size,
    or returned no number, on arguments the agent could shape, unless the self-check
    (the same metric on the trusted expected state alone) fails as well. A library the
    checker environment lacks, or a sandbox that could not run, is never the agent's.
    """
    if isinstance(answer, Returned):
        return None
    if isinstance(answer, Stopped):
        return Cause.AGENT if answer.by_input and not self_checked else Cause.INFRASTRUCTURE
    if isinstance(answer, Raised) and answer.missing_library:
        return Cause.INFRASTRUCTURE
    if not self_checked:
        return Cause.AGENT
    return Cause.AGENT if isinstance(answer.self_check, Returned) else Cause.INFRASTRUCTURE


def describe(answer: MetricAnswer) -> str:
    """What a metric call that gave no number did, in a phrase."""
    if isinstance(answer, Returned):
        return f"returned {answer.value!r}"
    if isinstance(answer, Stopped):
        return f"stopped: {answer.why}"
    if isinstance(answer, ReturnedOther):
        why = f"returned {answer.text} ({answer.type_name}), not a number"
    else:
        why = f"raised {answer.error}: {answer.message}"
    if answer.self_check is not None and not isinstance(answer.self_check, Returned):
        why += f"; on the expected state alone it {describe(answer.self_check)}"
    return why
