"""Calls one of OSWorld's own metric functions, inside the checker environment.

This file runs as a script, by path, under the checker environment's Python (the one with
PyPI's ``desktop-env``), in the sandbox `checker_env` makes. It imports nothing of
cleanroom, so it needs nothing of cleanroom's installed there.

desktop-env's package ``__init__`` files import every metric module, and those pull in a
whole agent stack. The module a metric lives in is loaded on its own instead: the parent
packages are registered as empty packages with their real ``__path__``, so importing the
one module runs that file and nothing else. A library that module imports at its top but
that the environment lacks (easyocr and its torch, by design) is a placeholder that raises
`MissingLibrary` on any use: a metric that needs it fails as the infrastructure's fault,
never as a score.

The requests are one JSON object on standard input, the calls made in order::

    {"inputs": "/input", "cache": "/tmp/cache",
     "calls": [{"module": "table", "function": "compare_table",
                "args": [ARG, ...], "options": {...},
                "self_check": [ARG, ...] | null}, ...]}

An ARG is JSON, except that ``{"$file": NAME}`` is a file the harness staged under
``inputs``: it is copied into ``cache`` (a folder the metric may write beside, as some of
OSWorld's do) and handed to the metric as its path there. ``self_check`` are the
arguments of a second call made only when the first raised: the same metric on the
expected state alone, which tells whether the fault lies in the result.

The answers are one JSON object on standard output, ``{"answers": [ANSWER, ...]}``
(anything a metric prints goes to standard error); an ANSWER is::

    {"value": 0.5, "type": "float"}                     the metric returned a number
    {"returned": "'abc'", "type": "str"}                it returned something else
    {"raised": "KeyError", "message": "...",
     "missing_library": false, "self_check": ANSWER}   it raised
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import numbers
import os
import shutil
import sys
import types
import warnings
from collections.abc import Collection, Iterator
from typing import Any

PACKAGES = (
    "desktop_env",
    "desktop_env.controllers",
    "desktop_env.evaluators",
    "desktop_env.evaluators.getters",
    "desktop_env.evaluators.metrics",
)
MESSAGE_LIMIT = 2000


class MissingLibrary(RuntimeError):
    """OSWorld code used a library the checker environment leaves out."""


class _Absent:
    """Stands for a name from a library that is not there; any use of it raises."""

    def __init__(self, name: str) -> None:
        self._name = name

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise MissingLibrary(f"{self._name} was used, but the checker environment lacks it")

    __call__ = _refuse
    __iter__ = _refuse
    __bool__ = _refuse
    __getitem__ = _refuse

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Absent(f"{self._name}.{attr}")


class _AbsentModule(types.ModuleType):
    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Absent(f"{self.__name__}.{attr}")


class _AbsentFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Gives a placeholder module for each library in ``names`` and its submodules."""

    def __init__(self, names: Collection[str]) -> None:
        self.names = frozenset(names)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] not in self.names:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _AbsentModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


@contextlib.contextmanager
def placeholders(names: Collection[str]) -> Iterator[None]:
    """While the block runs, importing a library of ``names`` gives a placeholder."""
    finder = _AbsentFinder(names)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n.split(".")[0] in finder.names]:
            if isinstance(sys.modules[name], _AbsentModule):
                del sys.modules[name]


def register_packages() -> None:
    """Register desktop-env's packages as empty ones, so a submodule loads on its own."""
    loaded = sys.modules.get("desktop_env")
    if loaded is not None and getattr(loaded, "__path__", None):
        root = next(iter(loaded.__path__))
    else:
        spec = importlib.util.find_spec("desktop_env")
        if spec is None or not spec.submodule_search_locations:
            raise MissingLibrary("desktop-env is not installed in the checker environment")
        root = next(iter(spec.submodule_search_locations))
    for name in PACKAGES:
        module = sys.modules.get(name)
        if isinstance(module, types.ModuleType) and hasattr(module, "__path__"):
            continue
        package = types.ModuleType(name)
        package.__path__ = [os.path.join(root, *name.split(".")[1:])]
        sys.modules[name] = package


def absent_imports(path: str) -> list[str]:
    """The top-level libraries a module file imports that cannot be found here."""
    import ast

    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names if n != "desktop_env" and importlib.util.find_spec(n) is None)


def load_metric_module(module: str, left_out: Collection[str] = ()) -> types.ModuleType:
    """desktop-env's ``evaluators/metrics/<module>.py`` and nothing else of the package.

    Libraries in ``left_out``, and any its file imports that are not installed, are
    placeholders that raise `MissingLibrary` when used.
    """
    register_packages()
    name = f"desktop_env.evaluators.metrics.{module}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise MissingLibrary(f"desktop-env has no metrics module {module!r}")
    absent = set(left_out) | set(absent_imports(spec.origin))
    with warnings.catch_warnings(), placeholders(absent):
        warnings.simplefilter("ignore")
        return importlib.import_module(name)


def _argument(value: Any, inputs: str, cache: str) -> Any:
    if isinstance(value, list):
        return [_argument(v, inputs, cache) for v in value]
    if isinstance(value, dict) and set(value) == {"$file"}:
        name = value["$file"]
        if not isinstance(name, str) or name.startswith("/") or ".." in name.split("/"):
            raise ValueError(f"bad staged file name {name!r}")
        target = os.path.join(cache, name)
        if not os.path.exists(target):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(os.path.join(inputs, name), target, follow_symlinks=False)
        return target
    return value


def _answer(function: Any, args: list[Any], options: dict[str, Any]) -> dict[str, Any]:
    try:
        with contextlib.redirect_stdout(sys.stderr):
            value = function(*args, **options)
    except MissingLibrary as exc:
        return {"raised": "MissingLibrary", "message": str(exc), "missing_library": True}
    except Exception as exc:
        return {
            "raised": type(exc).__name__,
            "message": str(exc)[:MESSAGE_LIMIT],
            "missing_library": False,
        }
    kind = type(value).__name__
    if kind == "bool_":  # numpy's, which no number class claims
        return {"value": float(bool(value)), "type": kind}
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral | bool):
        return {"value": float(value), "type": kind}
    if isinstance(value, numbers.Integral):  # bool and numpy's integers too
        return {"value": float(int(value)), "type": kind}
    return {"returned": repr(value)[:MESSAGE_LIMIT], "type": kind}


def _call(request: dict[str, Any], inputs: str, cache: str) -> dict[str, Any]:
    try:
        module = load_metric_module(request["module"])
        function = getattr(module, request["function"])
        args = [_argument(a, inputs, cache) for a in request["args"]]
    except MissingLibrary as exc:
        return {"raised": "MissingLibrary", "message": str(exc), "missing_library": True}
    answer = _answer(function, args, request.get("options") or {})
    failed = "returned" in answer or ("raised" in answer and not answer["missing_library"])
    if failed and request.get("self_check"):
        check = [_argument(a, inputs, cache) for a in request["self_check"]]
        answer["self_check"] = _answer(function, check, request.get("options") or {})
    return answer


def main() -> None:
    """Answer the requests on standard input: ``{"calls": [REQUEST, ...], "inputs": ...,
    "cache": ...}``, one answer each, in order, as ``{"answers": [ANSWER, ...]}``."""
    batch = json.loads(sys.stdin.read())
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr
    inputs, cache = batch["inputs"], batch["cache"]
    os.makedirs(cache, exist_ok=True)
    answers = [_call(request, inputs, cache) for request in batch["calls"]]
    out.write(json.dumps({"answers": answers}))
    out.flush()


if __name__ == "__main__":
    main()
