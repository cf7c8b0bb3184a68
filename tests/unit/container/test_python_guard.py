"""The sealed verifier's Python start-up hook: the image's modules win over the work dir's,
and the module under test is still found there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cleanroom.verifiers.container.run.context import PYTHON_GUARD_SOURCE


def run_python(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    env.update(PYTHONSAFEPATH="1", PYTHONNOUSERSITE="1", PYTHONPATH=str(PYTHON_GUARD_SOURCE))
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_a_module_in_the_work_dir_cannot_shadow_the_standard_library(tmp_path: Path) -> None:
    (tmp_path / "json.py").write_text("raise SystemExit('the agent ran')\n")

    done = run_python(tmp_path, "-c", "import json; print(json.__file__)")

    assert done.returncode == 0, done.stderr
    assert str(tmp_path) not in done.stdout


def test_a_module_run_with_dash_m_comes_from_the_image_not_the_work_dir(tmp_path: Path) -> None:
    (tmp_path / "pytest.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "test_x.py").write_text("def test_fails():\n    assert False\n")

    done = run_python(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_x.py")

    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed" in done.stdout


def test_the_module_under_test_is_still_found_in_the_work_dir(tmp_path: Path) -> None:
    (tmp_path / "stats_under_test.py").write_text("ANSWER = 42\n")

    done = run_python(tmp_path, "-c", "import stats_under_test as s; print(s.ANSWER)")

    assert (done.returncode, done.stdout.strip()) == (0, "42"), done.stderr


def test_a_script_finds_modules_beside_it_after_the_images_own(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("VALUE = 'beside'\n")
    (tmp_path / "os.py").write_text("raise SystemExit('the agent ran')\n")
    (tmp_path / "main.py").write_text("import helper, os\nprint(helper.VALUE, os.sep)\n")

    done = run_python(Path("/"), str(tmp_path / "main.py"))

    assert (done.returncode, done.stdout.strip()) == (0, "beside /"), done.stderr
