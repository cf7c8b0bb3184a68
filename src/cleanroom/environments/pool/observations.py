"""How each kind of observation is read from a running environment.

One reader per kind (`interface.OBSERVATIONS`), each a function of the environment and
its state; the pool applies them behind its gate.
"""

from __future__ import annotations

from collections.abc import Callable

from cleanroom.environments.interface import (
    SELECTIONS,
    AccessibilityTree,
    Clipboard,
    EnvironmentState,
    FocusedText,
    Observation,
    Screenshot,
    WindowList,
)
from cleanroom.environments.pool.environment import DesktopEnvironment

Reader = Callable[[DesktopEnvironment, EnvironmentState], Observation]

READERS: dict[type, Reader] = {
    Screenshot: lambda env, _: Screenshot(env.screenshot_png()),
    WindowList: lambda env, _: WindowList(tuple(env.windows())),
    FocusedText: lambda env, _: env.focused_text(),
    Clipboard: lambda env, _: Clipboard(tuple(env.read_clipboard(s) for s in SELECTIONS)),
    AccessibilityTree: lambda env, _: env.accessibility_tree(),
    EnvironmentState: lambda _, state: state,
}
