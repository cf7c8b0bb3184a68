"""What code outside the environments may use of a desktop's accessibility reader.

OSWorld's ``accessibility_tree`` getter runs the environment's own reader once in the
guest, as the observations do; it needs the reader's program, its limits and the check
its answers pass, and nothing else of the X11 layer, which stays behind the desktop
interface.
"""

from __future__ import annotations

from cleanroom.environments.x11.atspi import (
    MAX_ANSWER_BYTES,
    READER_SOURCE,
    SYSTEM_PYTHON,
    TREE_TIMEOUT_S,
    AtspiUnavailable,
    checked_tree,
)

__all__ = [
    "MAX_ANSWER_BYTES",
    "READER_SOURCE",
    "SYSTEM_PYTHON",
    "TREE_TIMEOUT_S",
    "AtspiUnavailable",
    "checked_tree",
]
