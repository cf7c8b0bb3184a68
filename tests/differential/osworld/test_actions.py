"""cleanroom's OSWorld actions against OSWorld's own code: the pyautogui calls its
controller sends for the pointer actions cleanroom runs as code, the rewrite of
``'<'`` its ``step`` makes of an agent's code, and the code its ``step`` runs for an
action of each code space."""

from __future__ import annotations

import ast
import importlib.util
import logging
import re
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("desktop_env")

from hypothesis import given
from hypothesis import strategies as st

from cleanroom.environments.osworld_env.actions import (
    CONTROL_TYPES,
    PointerCode,
    PyautoguiCode,
    computer_13_outcome,
    rewrite_less_than,
    step_action,
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


def _osworld_step() -> Callable[..., Any]:
    """OSWorld's ``DesktopEnv.step``, unchanged, compiled from its source as the rewrite
    is (its module imports the whole of OSWorld), with its waits made instant."""
    spec = importlib.util.find_spec("desktop_env")
    assert spec is not None and spec.submodule_search_locations
    source = Path(next(iter(spec.submodule_search_locations)), "desktop_env.py").read_text()
    (env_class,) = [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef) and node.name == "DesktopEnv"
    ]
    (step,) = [n for n in env_class.body if isinstance(n, ast.FunctionDef) and n.name == "step"]
    namespace: dict[str, Any] = {
        "_fix_pyautogui_less_than_bug": THEIRS,
        "time": types.SimpleNamespace(sleep=lambda _: None),
        "logger": logging.getLogger("osworld-step"),
    }
    exec(compile(ast.Module([step], type_ignores=[]), "desktop_env.py", "exec"), namespace)
    function: Callable[..., Any] = namespace["step"]
    return function


class _Recorded:
    """What OSWorld's ``step`` asks of ``self``: its controller's calls are recorded."""

    def __init__(self, action_space: str) -> None:
        self.action_space = action_space
        self._step_no = 0
        self._traj_no = 0
        self.action_history: list[Any] = []
        self.is_environment_used = False
        self.ran: list[str] = []
        self.controller = types.SimpleNamespace(
            execute_python_command=self.ran.append, execute_action=lambda _: None
        )

    def _get_obs(self) -> dict[str, Any]:
        return {}


STEP = _osworld_step()

_CODE = st.lists(_PIECES, max_size=8).map("".join)
_CLAUDE_ACTIONS = _CODE.map(
    lambda code: {"name": "computer", "input": {}, "id": "t", "action_type": "tool_use",
                  "command": code}
)  # fmt: skip


@EXAMPLES
@given(st.sampled_from(["pyautogui", "claude_computer_use"]), st.one_of(_CODE, _CLAUDE_ACTIONS))
def test_a_code_spaces_action_runs_the_code_osworlds_step_runs(space: str, action: Any) -> None:
    if action in CONTROL_TYPES:
        return
    recorded = _Recorded(space)
    STEP(recorded, action, 0)
    ours = step_action(space, action, screen=SCREEN)
    assert isinstance(ours, PyautoguiCode)
    assert [ours.command] == recorded.ran


def test_osworld_1_0_2_runs_none_of_an_autoglm_action_and_cleanroom_runs_its_code() -> None:
    # The one deliberate difference in the agents' spaces (docs: where it differs).
    recorded = _Recorded("autoglm_computer_use")
    STEP(recorded, "pyautogui.click(1, 2)", 0)
    assert recorded.ran == []
    ours = step_action("autoglm_computer_use", "pyautogui.click(1, 2)", screen=SCREEN)
    assert ours == PyautoguiCode("pyautogui.click(1, 2)")
