"""OSWorld's own metric and getter functions, from PyPI's desktop-env, and how to call them
side by side with cleanroom's.

desktop-env's package ``__init__`` files import every metric and getter module, and those
pull in torch, easyocr, librosa and the like. The modules compared here are loaded one by
one instead: the parent packages are registered as empty packages (with their real
``__path__``), so importing a submodule runs that module's file and nothing else. Of the
libraries those files import at their top, the heavy ones that no compared function calls
(`LEFT_OUT`) are replaced, while the modules load, by placeholders that raise
`LeftOutUsed` on any use, so a compared function that did need one would fail loudly
rather than be compared wrongly. Every function compared is OSWorld's code, unchanged.

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
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings

from cleanroom.verifiers.osworld.cached_file import CachedFile, NotText

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

# Imported at the top of a loaded module, never called by a compared function.
LEFT_OUT = ("cv2", "formulas", "numpy", "pandas", "playwright", "pydrive", "skimage")

# The real libraries the loaded modules import, imported before the placeholders exist,
# so that none of them mistakes a placeholder for the real library (openpyxl looks for
# numpy, for one).
_REAL_FIRST = (
    "PIL.Image",
    "PyPDF2",
    "docx",
    "lxml.cssselect",
    "lxml.etree",
    "openpyxl",
    "pdfplumber",
    "pytz",
    "rapidfuzz",
    "requests",
    "tldextract",
    "xmltodict",
    "yaml",
)

_PACKAGES = (
    "desktop_env",
    "desktop_env.controllers",
    "desktop_env.evaluators",
    "desktop_env.evaluators.getters",
    "desktop_env.evaluators.metrics",
)

_METRIC_MODULES = ("basic_os", "general", "gimp", "table", "vscode")
_GETTER_MODULES = ("chrome", "file", "general", "gimp", "impress", "info", "misc", "vlc")


class LeftOutUsed(RuntimeError):
    """OSWorld code used a library the reference environment leaves out."""


class _Absent:
    """Stands for a name from a left-out library; any use of it raises."""

    def __init__(self, name: str) -> None:
        self._name = name

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise LeftOutUsed(f"{self._name} was used, but the reference environment leaves it out")

    __call__ = _refuse
    __iter__ = _refuse
    __bool__ = _refuse
    __getitem__ = _refuse

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Absent(f"{self._name}.{attr}")


class _LeftOutModule(types.ModuleType):
    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Absent(f"{self.__name__}.{attr}")


class _LeftOutFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Gives a placeholder module for a left-out library and any of its submodules."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] not in LEFT_OUT:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _LeftOutModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


@contextlib.contextmanager
def _placeholders() -> Iterator[None]:
    finder = _LeftOutFinder()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n.split(".")[0] in LEFT_OUT]:
            if isinstance(sys.modules[name], _LeftOutModule):
                del sys.modules[name]


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
    spec = importlib.util.find_spec("desktop_env")
    assert spec is not None and spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    for name in _PACKAGES:
        if not isinstance(sys.modules.get(name), types.ModuleType) or not hasattr(
            sys.modules[name], "__path__"
        ):
            package = types.ModuleType(name)
            package.__path__ = [str(root.joinpath(*name.split(".")[1:]))]
            sys.modules[name] = package
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PyPDF2 announces its successor
        for name in _REAL_FIRST:
            importlib.import_module(name)
    with _placeholders():
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
        except LeftOutUsed:
            raise
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
