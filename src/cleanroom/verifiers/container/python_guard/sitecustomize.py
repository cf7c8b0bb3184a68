"""cleanroom's start-up hook for every Python process of a sealed verifier.

The verifier runs Python with ``PYTHONSAFEPATH`` set, so Python no longer puts the
current folder (``-m``, ``-c``) or the script's folder in front of the standard library
and the installed packages, where a file the agent left (``/app/pytest.py``) would take
over a name the pristine image provides. This hook puts that folder back at the *end* of
``sys.path``: a test that imports the module under test from the work dir still finds
it, and no name the image provides can be shadowed. Then it runs the image's own
``sitecustomize``, if it has one, as Python would have.
"""

import importlib.machinery
import importlib.util
import os
import sys


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
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_guard()
del _guard
