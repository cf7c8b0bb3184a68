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
- **Bytecode.** A module of the agent's state is compiled from its source every time:
  no ``__pycache__`` the agent left beside a source is read (nor written), so a source
  file left exactly as the task shipped it is the code that runs. This holds for every
  way a state folder is reached: this hook's finder, a folder a test puts back on
  ``sys.path`` (a path hook of this hook's answers for every folder in the state,
  before Python's own), and a package's own folder. Where a module's source and a
  compiled form of it (an extension or a legacy ``.pyc``) lie side by side, the source
  is loaded. The image's own modules keep their own bytecode, as the image ships it.
- **Witness.** In a process that runs pytest (``pytest ...``, ``python -m pytest ...``),
  it loads cleanroom's runner witness (``witness.py`` beside it) as a pytest plugin under
  the name ``CLEANROOM_WITNESS_PLUGIN`` gives, and registers the witness's exit record
  before anything else can register an exit handler (so it runs last).

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


class StateSourceLoader(importlib.machinery.SourceFileLoader):
    """Loads a module of the agent's state from its source, never from a cache: with no
    stats of the source to check a cache against, Python neither reads nor writes one."""

    def path_stats(self, path: str) -> Dict[str, Any]:
        raise OSError("the agent's bytecode is never read")


def _state_file_finder(folder: str) -> Any:
    return importlib.machinery.FileFinder(
        folder,
        (StateSourceLoader, importlib.machinery.SOURCE_SUFFIXES),
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
        (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
    )


def _state_path_hook(state: List[str]) -> Any:
    """A path hook that answers for the folders in the state (a package's, one a test puts
    on ``sys.path``) with `_state_file_finder`, and leaves every other to Python's."""

    def hook(entry: str) -> Any:
        if entry and os.path.isdir(entry) and _in_state(entry, state):
            return _state_file_finder(os.path.abspath(entry))
        raise ImportError("not a folder of the agent's state")

    return hook


class StateFinder(importlib.abc.MetaPathFinder):
    """Finds top-level modules in the agent's state folders, after every other finder;
    finds no distributions. Source comes before compiled forms of the same name."""

    def __init__(self, folders: List[str]) -> None:
        self.folders = folders
        self._finders: Dict[str, Any] = {}

    def _finder(self, folder: str) -> Any:
        if folder not in self._finders:
            self._finders[folder] = _state_file_finder(folder)
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


_PYTEST_SCRIPTS = ("pytest", "py.test")
_VALUE_FLAGS = ("-X", "-W", "--check-hash-based-pycs")


def _command_line() -> List[str]:
    argv = getattr(sys, "orig_argv", None)
    if argv:
        return [str(a) for a in argv]
    try:
        with open("/proc/self/cmdline", "rb") as fh:
            raw = fh.read(1 << 16)
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def _runs_pytest(argv: List[str]) -> bool:
    """Whether the interpreter's command line runs pytest: ``-m pytest`` or a script
    named ``pytest*`` or ``py.test*`` (its console scripts)."""
    args = argv[1:]
    skip = False
    for n, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in _VALUE_FLAGS:
            skip = True
        elif arg == "-m":
            return n + 1 < len(args) and args[n + 1] in _PYTEST_SCRIPTS
        elif arg.startswith("-m"):
            return arg[2:] in _PYTEST_SCRIPTS
        elif arg.startswith("-c") or arg == "-":
            return False
        elif not arg.startswith("-"):
            return os.path.basename(arg).startswith(_PYTEST_SCRIPTS)
    return False


def _witness() -> None:
    folder = os.environ.get("CLEANROOM_WITNESS", "")
    name = os.environ.get("CLEANROOM_WITNESS_PLUGIN", "")
    if not folder or not name.isidentifier():
        return
    plugins = [p.strip() for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p.strip()]
    argv = _command_line()
    # Only the pytest that test.sh started is witnessed, not one a test runs in turn.
    witnessed = "CLEANROOM_WITNESSED" not in os.environ and _runs_pytest(argv)
    if not witnessed and name not in plugins:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(name, os.path.join(here, "witness.py"))
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if witnessed:
        os.environ["CLEANROOM_WITNESSED"] = str(os.getpid())
        if name not in plugins:
            os.environ["PYTEST_PLUGINS"] = ",".join([*plugins, name])
        module.start(folder, argv, _state_paths())


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
        sys.path_hooks.insert(0, _state_path_hook(state))
        sys.meta_path.append(StateFinder(list(dict.fromkeys(moved))))
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_witness()
_guard()
del _guard
