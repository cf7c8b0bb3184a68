"""The sealed verifier's Python start-up hook: the agent's state is found as modules,
never as metadata, and its bytecode is never read (python_guard/sitecustomize.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import py_compile
import subprocess
import sys
from pathlib import Path

from cleanroom.verifiers.container.run.context import PYTHON_GUARD_SOURCE

GUARD = PYTHON_GUARD_SOURCE


def run_guarded(code: str, cwd: Path, state: list[str]) -> str:
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"},
        "PYTHONSAFEPATH": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONPATH": str(GUARD),
        "CLEANROOM_STATE": json.dumps(state),
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def work_dir(tmp_path: Path) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    (app / "stats.py").write_text("ANSWER = 'source'\n")
    dist = app / "helper-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: helper\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[pytest11]\nhelper = helper_plugin\n")
    return app


def test_a_module_of_the_state_is_still_imported(tmp_path: Path) -> None:
    app = work_dir(tmp_path)

    out = run_guarded("import stats; print(stats.ANSWER)", app, [str(app)])

    assert out == "source"


def test_the_states_distributions_register_no_entry_point(tmp_path: Path) -> None:
    app = work_dir(tmp_path)
    code = (
        "import importlib.metadata as m; "
        "print(sorted(e.name for e in m.entry_points(group='pytest11'))); "
        "print([d.metadata['Name'] for d in m.distributions() if d.metadata['Name'] == 'helper'])"
    )

    out = run_guarded(code, app, [str(app)])

    assert "helper" not in out


def test_without_the_state_named_the_same_metadata_is_found(tmp_path: Path) -> None:
    # The control: the dist-info is real metadata that Python would register.
    app = work_dir(tmp_path)
    code = "import importlib.metadata as m; print(m.version('helper'))"

    assert run_guarded(code, app, []) == "1.0"


def test_bytecode_the_agent_left_beside_the_source_is_not_run(tmp_path: Path) -> None:
    app = work_dir(tmp_path)
    source = app / "stats.py"
    forged = tmp_path / "forged"
    forged.mkdir()
    (forged / "stats.py").write_text("ANSWER = 'forged'\n")
    # Compile the forgery where Python would look for the source's bytecode, with the
    # source's own mtime and size in the header.
    stat = source.stat()  # the forgery has the same length, so the same size
    os.utime(forged / "stats.py", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    target = Path(importlib.util.cache_from_source(str(source)))
    target.parent.mkdir()
    py_compile.compile(str(forged / "stats.py"), cfile=str(target))
    plain = subprocess.run(
        [sys.executable, "-c", "import stats; print(stats.ANSWER)"],
        cwd=app,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
    )
    assert plain.stdout.strip() == "forged"  # the control: Python would run the forgery

    out = run_guarded("import stats; print(stats.ANSWER)", app, [str(app)])

    assert out == "source"
    put_back = f"import sys; sys.path.insert(0, {str(app)!r}); import stats; print(stats.ANSWER)"
    # A test that puts the work dir back in front of the path (as fix-median's does).
    assert run_guarded(put_back, tmp_path, [str(app)]) == "source"


def forge_beside(source: Path, text: str) -> Path:
    """Bytecode of ``text`` where Python looks for ``source``'s, with its header."""
    forged = source.with_name("forged_" + source.name)
    forged.write_text(text)
    stat = source.stat()
    os.utime(forged, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    target = Path(importlib.util.cache_from_source(str(source)))
    target.parent.mkdir(exist_ok=True)
    py_compile.compile(str(forged), cfile=str(target))
    forged.unlink()
    return target


def test_bytecode_beside_a_submodule_of_a_state_package_is_not_run(tmp_path: Path) -> None:
    app = work_dir(tmp_path)
    package = app / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "sub.py").write_text("ANSWER = 'source'\n")
    forge_beside(package / "sub.py", "ANSWER = 'forged'\n")
    code = "import pkg.sub; print(pkg.sub.ANSWER)"

    assert run_guarded(code, app, []) == "forged"  # the control: Python would run it
    assert run_guarded(code, app, [str(app)]) == "source"


def test_the_images_own_modules_keep_their_bytecode(tmp_path: Path) -> None:
    # Outside the state, Python's own loaders (and caches) answer, as the image ships them.
    code = "import json, importlib.machinery as m; print(type(json.__loader__).__name__)"

    assert run_guarded(code, tmp_path, [str(tmp_path / "app")]) == "SourceFileLoader"
