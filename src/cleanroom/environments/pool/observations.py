"""How each kind of observation is read from a running environment.

One reader per kind (`interface.OBSERVATIONS`), each a function of the environment and
its state; the pool applies them behind its gate.
"""

from __future__ import annotations

from collections.abc import Callable

from cleanroom.core.canary import CANARY_ENV
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

# A reader takes the environment and its current generation.
Reader = Callable[[DesktopEnvironment, int], Observation]


def state_of(env: DesktopEnvironment, generation: int) -> EnvironmentState:
    """What a policy may know about an environment: its generation and programs."""
    programs = tuple(p.name for p in env.programs)
    return EnvironmentState(env.name, generation, env.name == CANARY_ENV, programs, env.spec.screen)


READERS: dict[type, Reader] = {
    Screenshot: lambda env, _: Screenshot(env.screenshot_png()),
    WindowList: lambda env, _: WindowList(tuple(env.windows())),
    FocusedText: lambda env, _: env.focused_text(),
    Clipboard: lambda env, _: Clipboard(tuple(env.read_clipboard(s) for s in SELECTIONS)),
    AccessibilityTree: lambda env, _: env.accessibility_tree(),
    EnvironmentState: state_of,
}
