# ruff: noqa: UP006, UP035, UP045  (it runs under the image's Python, which may predate 3.9)
"""cleanroom's start-up hook for every Python process of a sealed verifier.

What the agent left is data to this Python, never configuration:

- **Order.** The verifier runs Python with ``PYTHONSAFEPATH`` set, so Python no longer
  puts the current folder (``-m``, ``-c``) or the script's folder in front of the standard
  library and the installed packages, where a file the agent left (``/app/pytest.py``)
  would take over a name the pristine image provides. This hook puts that folder back
  *after* everything else: a test that imports the module under test from the work dir
  still finds it, and no name the image provides can be shadowed.
- **Metadata.** Distributions (``*.dist-info``, ``*.egg-info``, ``*.egg-link``) are found
  by walking ``sys.path``, whatever the order, and they register entry points: a test
  runner's plugins, console scripts. So no folder of the agent's state (the paths named
  in ``CLEANROOM_STATE``) stays on ``sys.path``: its modules are found by a finder of
  this hook's at the end of ``sys.meta_path``, which finds modules and no distributions,
  so no metadata tool (``importlib.metadata``, its backport, ``pkg_resources``) ever
  walks them.
- **Bytecode.** The verifier sets ``PYTHONPYCACHEPREFIX`` to a folder of its own: no
  ``__pycache__`` the agent left beside a source is read, so a source file left exactly
  as the task shipped it is the code that runs. Where a module's source and a compiled
  form of it (an extension or a legacy ``.pyc``) lie side by side in the agent's state,
  the source is what this hook's finder loads.

Then it runs the image's own ``sitecustomize``, if it has one, as Python would have.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from typing import Any, Dict, List, Optional


def _state_paths() -> List[str]:
    try:
        found = json.loads(os.environ.get("CLEANROOM_STATE", "[]"))
    except ValueError:
        return []
    return [os.path.normpath(p) for p in found if isinstance(p, str) and p.startswith("/")]


def _in_state(entry: str, state: List[str]) -> bool:
    path = os.path.abspath(entry or ".")
    return any(path == s or path.startswith(s.rstrip("/") + "/") for s in state)


class StateFinder(importlib.abc.MetaPathFinder):
    """Finds top-level modules in the agent's state folders, after every other finder;
    finds no distributions. Source comes before compiled forms of the same name."""

    def __init__(self, folders: List[str]) -> None:
        self.folders = folders
        self._finders: Dict[str, Any] = {}

    def _finder(self, folder: str) -> Any:
        if folder not in self._finders:
            self._finders[folder] = importlib.machinery.FileFinder(
                folder,
                (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES),
                (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
                (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
            )
        return self._finders[folder]

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Optional[Any]:
        if path is not None:
            return None  # a submodule: its package's own path finds it
        for folder in list(self.folders):
            spec = self._finder(folder).find_spec(fullname, target)
            if spec is not None:
                return spec
        return None

    def invalidate_caches(self) -> None:
        for finder in self._finders.values():
            finder.invalidate_caches()


def _guard() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    script = sys.argv[0] if sys.argv else ""
    if script and script not in ("-c", "-m") and os.path.isfile(script):
        first = os.path.dirname(os.path.abspath(script))
    else:
        try:
            first = os.getcwd()
        except OSError:
            first = ""
    if first and first not in sys.path:
        sys.path.append(first)
    state = _state_paths()
    if state:
        moved = [os.path.abspath(p or ".") for p in sys.path if _in_state(p, state)]
        sys.path[:] = [p for p in sys.path if not _in_state(p, state)]
        for entry in list(sys.path_importer_cache):
            if _in_state(entry, state):
                del sys.path_importer_cache[entry]
        sys.meta_path.append(StateFinder(list(dict.fromkeys(moved))))
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_guard()
del _guard
