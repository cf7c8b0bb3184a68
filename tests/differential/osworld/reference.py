"""OSWorld's own metric and getter functions, from PyPI's desktop-env, and how to call them
side by side with cleanroom's.

desktop-env's package ``__init__`` files import every metric and getter module, and those
pull in torch, easyocr, librosa and the like. The modules compared here are loaded one by
one instead, as the checker environment loads them: the parent packages are registered as
empty packages (with their real ``__path__``), so importing a submodule runs that module's
file and nothing else, with the real libraries it imports. Every function compared is
OSWorld's code, unchanged.

`make setup` (scripts/setup.sh) makes the environment (.venv-osworld) these tests
run in.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import io
import locale
import os
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings

from cleanroom.verifiers.osworld.cached_file import CachedFile, NotText
from cleanroom.verifiers.osworld.checker_env_worker import placeholders, register_packages

from .differences import DELIBERATE

OSWORLD_VERSION = "1.0.2"

# Modest and repeatable: the same examples on every run. OSWORLD_DIFF_EXAMPLES raises the
# count for a longer search.
EXAMPLES = settings(
    max_examples=int(os.environ.get("OSWORLD_DIFF_EXAMPLES", "200")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

REPO = Path(__file__).resolve().parents[3]
# The real OSWorld tasks cleanroom carries: the copied ones and the one it ships.
TASK_FILES = sorted((REPO / "tests/data/osworld/tasks").rglob("*.json")) + sorted(
    (REPO / "src/cleanroom/verifiers/osworld/bundled").glob("*.json")
)

# Imported at the top of a getter module (Chrome's), never called by a compared getter,
# and not installed: while the modules load, a placeholder stands for each, and any use
# of one raises MissingLibrary, so a compared function that needed it fails loudly.
LEFT_OUT = ("playwright", "pydrive")

_METRIC_MODULES = ("basic_os", "general", "gimp", "table", "vscode")
_GETTER_MODULES = ("chrome", "file", "general", "gimp", "impress", "info", "misc", "vlc")


@dataclass(frozen=True)
class OSWorld:
    """The loaded OSWorld functions: metrics and getters by name, the VM controller, and
    the getter modules by name (``file``, ``misc``, ...), for tests that set their clock."""

    metrics: dict[str, Callable[..., Any]]
    getters: dict[str, Callable[..., Any]]
    python_controller: type
    file_getters: types.ModuleType
    getter_modules: dict[str, types.ModuleType]


_loaded: OSWorld | None = None


def osworld() -> OSWorld:
    """OSWorld's functions, loaded once."""
    global _loaded
    if _loaded is None:
        _loaded = _load()
    return _loaded


def _load() -> OSWorld:
    if not text_locale_is_utf8():
        raise RuntimeError(
            "OSWorld's metrics open files in the locale's encoding: run these "
            "tests with a UTF-8 locale, as OSWorld's harness runs"
        )
    version = importlib.metadata.version("desktop-env")
    if version != OSWORLD_VERSION:
        raise RuntimeError(
            f"desktop-env {version} is installed; these tests compare with "
            f"{OSWORLD_VERSION} (run make setup)"
        )
    register_packages()
    with warnings.catch_warnings(), placeholders(LEFT_OUT):
        warnings.simplefilter("ignore", DeprecationWarning)  # PyPDF2 announces its successor
        metric_modules = [
            importlib.import_module(f"desktop_env.evaluators.metrics.{m}") for m in _METRIC_MODULES
        ]
        getter_modules = {
            m: importlib.import_module(f"desktop_env.evaluators.getters.{m}")
            for m in _GETTER_MODULES
        }
        controller = importlib.import_module("desktop_env.controllers.python")
    metrics = _functions_of(metric_modules, prefix="")
    getters = _functions_of(list(getter_modules.values()), prefix="get_")
    return OSWorld(
        metrics, getters, controller.PythonController, getter_modules["file"], getter_modules
    )


def _functions_of(modules: list[types.ModuleType], prefix: str) -> dict[str, Any]:
    """The functions the modules define (not import), by name without ``prefix``."""
    found: dict[str, Any] = {}
    for module in modules:
        for name, value in vars(module).items():
            if (
                isinstance(value, types.FunctionType)
                and value.__module__ == module.__name__
                and name.startswith(prefix)
                and not name.startswith("_")
            ):
                assert name[len(prefix) :] not in found, f"{name} is defined twice"
                found[name[len(prefix) :]] = value
    return found


def text_locale_is_utf8() -> bool:
    """Whether ``open()`` without an encoding reads UTF-8 here, as in OSWorld's harness."""
    return locale.getpreferredencoding(False).lower().replace("-", "") == "utf8"


class Files:
    """Writes each content once: a path for OSWorld, a `CachedFile` for cleanroom."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._count = 0

    def pair(self, data: bytes | None, name: str = "file") -> tuple[str | None, CachedFile | None]:
        if data is None:
            return None, None
        self._count += 1
        path = self.root / f"{self._count}-{name}"
        path.write_bytes(data)
        return str(path), CachedFile(str(path), data)


# --- calling both sides -------------------------------------------------------------------


@dataclass(frozen=True)
class Raised:
    """A call that raised: OSWorld's evaluation would crash; cleanroom's run is invalid."""

    error: str

    def __repr__(self) -> str:
        return f"raised {self.error}"


def call_osworld(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """OSWorld's function on these arguments: its value, or `Raised`. Its prints are hidden."""
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            return function(*args, **kwargs)
        except Exception as exc:
            return Raised(type(exc).__name__)


def call_cleanroom(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """cleanroom's function: its value, or `Raised`.

    A metric that stopped at a result file that is not text scores 0, as the evaluator
    scores it (``TaskRun._call``): the agent's output is never a reason to be invalid.
    """
    try:
        return function(*args, **kwargs)
    except NotText as exc:
        if args and _holds(args[0], exc.file):
            return 0.0
        return Raised("NotText")
    except Exception as exc:
        return Raised(type(exc).__name__)


def _holds(value: Any, file: CachedFile) -> bool:
    return value is file or (isinstance(value, list) and any(v is file for v in value))


def same_score(ours: Any, theirs: Any) -> bool:
    """Whether two metric outcomes agree: equal numbers, or both raised (no score)."""
    if isinstance(ours, Raised) or isinstance(theirs, Raised):
        return isinstance(ours, Raised) and isinstance(theirs, Raised)
    if isinstance(theirs, bool) or not isinstance(theirs, int | float):
        return False
    return isinstance(ours, float) and ours == float(theirs)


def agree(what: str, ours: Any, theirs: Any, case: Any, *, may_differ: str | None = None) -> None:
    """Fail unless the two outcomes agree, or differ where ``may_differ`` names a
    deliberate difference (the caller passes it only in the situation the name covers)."""
    if same_score(ours, theirs):
        return
    if may_differ is not None:
        assert may_differ in DELIBERATE, f"{may_differ!r} is not in DELIBERATE"
        return
    raise AssertionError(f"{what} disagrees on {case!r}: cleanroom {ours!r}, OSWorld {theirs!r}")
