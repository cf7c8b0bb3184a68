"""cleanroom's OSWorld actions against OSWorld's own code: the pyautogui calls its
controller sends for the pointer actions cleanroom runs as code, and the rewrite of
``'<'`` its ``step`` makes of an agent's code."""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("desktop_env")

from hypothesis import given
from hypothesis import strategies as st

from cleanroom.environments.osworld_env.actions import (
    PointerCode,
    computer_13_outcome,
    rewrite_less_than,
)

from .reference import EXAMPLES, osworld

SCREEN = (1920, 1080)


def _osworld_less_than_fix() -> Callable[[str], str]:
    """OSWorld's ``_fix_pyautogui_less_than_bug``, unchanged: its module imports the whole
    of OSWorld (gymnasium, cloud providers), so the one function is compiled from its
    source, with the one module it uses."""
    spec = importlib.util.find_spec("desktop_env")
    assert spec is not None and spec.submodule_search_locations
    source = Path(next(iter(spec.submodule_search_locations)), "desktop_env.py").read_text()
    tree = ast.parse(source)
    found = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == "_fix_pyautogui_less_than_bug"
    ]
    assert len(found) == 1, "desktop-env 1.0.2 defines the function once"
    namespace: dict[str, Any] = {"re": re}
    exec(compile(ast.Module(found, type_ignores=[]), "desktop_env.py", "exec"), namespace)
    fix: Callable[[str], str] = namespace["_fix_pyautogui_less_than_bug"]
    return fix


THEIRS = _osworld_less_than_fix()

# Code an agent writes, leaning on what the rewrite matches: both quotes, '<' and its
# escapes, other escapes, non-ASCII text, a trailing backslash, nested calls.
_PIECES = st.sampled_from(
    [
        "pyautogui.typewrite(",
        "pyautogui.press(",
        "pyautogui.write(",
        ")",
        "'",
        '"',
        "<",
        ">",
        "\\u003c",
        "\\\\u003c",
        "\\n",
        "\\",
        "a",
        " ",
        ";",
        "é",
        "\u2028",
        "<b>",
        "pyautogui.press('<')",
        'pyautogui.press("\\u003c")',
        "pyautogui.typewrite('x<y')",
    ]
)
AGENT_CODE = st.lists(_PIECES, max_size=12).map("".join)


@EXAMPLES
@given(AGENT_CODE)
def test_the_rewrite_of_less_than_is_osworlds(code: str) -> None:
    assert rewrite_less_than(code) == THEIRS(code)


@pytest.mark.parametrize(
    "code",
    [
        "pyautogui.typewrite('<html>')",
        'pyautogui.typewrite("a<b"); pyautogui.press("<")',
        r"pyautogui.typewrite('\u003c\n')",
        "pyautogui.typewrite('caf\u00e9 <')",
        "pyautogui.typewrite('end\\')",
        "pyautogui.typewrite('<<')",
    ],
)
def test_the_rewrite_of_less_than_is_osworlds_on_known_cases(code: str) -> None:
    assert rewrite_less_than(code) == THEIRS(code)


def _osworld_calls(action: dict[str, Any]) -> list[str]:
    """The code OSWorld's controller sends its server for ``action``."""
    controller = osworld().python_controller("127.0.0.1", 5000)
    sent: list[str] = []
    controller.execute_python_command = sent.append
    controller.execute_action(action)
    return sent


_COORD = st.integers(0, 1080)
_BUTTON = st.sampled_from(["left", "right", "middle"])
POINTER_ACTIONS = st.one_of(
    st.fixed_dictionaries({"action_type": st.just("CLICK")}, optional={"button": _BUTTON}),
    st.fixed_dictionaries(
        {
            "action_type": st.just("CLICK"),
            "button": _BUTTON,
            "num_clicks": st.sampled_from([1, 2, 3]),
        }
    ),
    st.fixed_dictionaries({"action_type": st.sampled_from(["RIGHT_CLICK", "DOUBLE_CLICK"])}),
    st.fixed_dictionaries(
        {"action_type": st.sampled_from(["MOUSE_DOWN", "MOUSE_UP"])}, optional={"button": _BUTTON}
    ),
    st.fixed_dictionaries({"action_type": st.just("DRAG_TO"), "x": _COORD, "y": _COORD}),
    st.fixed_dictionaries(
        {"action_type": st.just("SCROLL"), "dx": st.integers(-50, 50), "dy": st.integers(-50, 50)}
    ),
)


@EXAMPLES
@given(POINTER_ACTIONS)
def test_pointer_actions_run_the_calls_osworlds_controller_sends(action: dict[str, Any]) -> None:
    ours = computer_13_outcome(action, screen=SCREEN)
    assert isinstance(ours, PointerCode)
    theirs = _osworld_calls(
        {
            "action_type": action["action_type"],
            "parameters": {k: v for k, v in action.items() if k != "action_type"},
        }
    )
    assert [c.command for c in ours.codes] == theirs
