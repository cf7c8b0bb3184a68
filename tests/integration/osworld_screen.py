"""What a scripted OSWorld-style agent reads off the screen: a point of a program's
window that no other window covers (Writer lies over most of the terminal), to click."""

from __future__ import annotations

from typing import Any

# The window class each program's window has.
WM_CLASS = {"terminal": "xterm"}


def visible_point(windows: list[dict[str, Any]], program: str = "terminal") -> tuple[int, int]:
    """A point of ``program``'s window that none of the other ``windows`` covers."""
    wm_class = WM_CLASS[program]
    (target,) = [w for w in windows if wm_class in str(w["wm_class"]).lower()]
    others = [w for w in windows if w is not target]

    def covered(x: int, y: int) -> bool:
        return any(
            o["x"] <= x < o["x"] + o["width"] and o["y"] <= y < o["y"] + o["height"] for o in others
        )

    for y in range(target["y"] + 5, target["y"] + target["height"], 10):
        for x in range(target["x"] + 5, target["x"] + target["width"], 10):
            if not covered(x, y):
                return x, y
    raise AssertionError(f"no visible point of the {program} in {windows}")
