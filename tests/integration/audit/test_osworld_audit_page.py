"""The published execution audit of OSWorld's tasks (docs/osworld-audit.md) is what its
regeneration command gives: a few of its tasks, audited again on a pool of desktops over
a mirror of made files, have the page's rows."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import CLEANROOM, REPO, run_audit

PAGE = REPO / "docs/osworld-audit.md"
EXAMPLES = REPO / "tests/data/osworld/evaluation_examples/examples"
# Tasks run end to end: a volume read through the sound server, the default video player,
# a workbook and a document fetched from the mirror, opened in their apps and compared with
# an expected made file, an image placed for its gold state; and one not run, for the
# system service it needs.
SAMPLE = {
    "os": ["28cc3b7e-b194-4bc9-8353-d04c0f4d56d2", "b6781586-6346-41cd-935a-a6b1487918fc"],
    "multi_apps": [
        "937087b6-f668-4ba6-9110-60682ee33441",
        "00fa164e-2612-4439-992e-157d019a8436",
    ],
    "libreoffice_calc": ["01b269ae-2111-4a07-81fd-3fcd711993b0"],
    "gimp": ["045bf3ff-9077-4b86-b483-a1040a949cff"],
}
NOT_RUN = {"b6781586-6346-41cd-935a-a6b1487918fc": "needs system service"}

pytestmark = [pytest.mark.integrations, pytest.mark.timeout(1800)]


def task_rows(page: str) -> dict[str, str]:
    """The page's rows of tasks run, by task id."""
    return {line.split("`")[1]: line for line in page.splitlines() if line.startswith("| `")}


def test_a_sample_audited_again_has_the_published_pages_rows(
    desktop_stack: None, tmp_path: Path
) -> None:
    # Given an index of the sample with its task files, and a mirror made for it
    index = tmp_path / "sample.json"
    index.write_text(json.dumps(SAMPLE))
    for domain, ids in SAMPLE.items():
        (tmp_path / "examples" / domain).mkdir(parents=True)
        for task_id in ids:
            name = f"{domain}/{task_id}.json"
            shutil.copyfile(EXAMPLES / name, tmp_path / "examples" / name)
    mirror = tmp_path / "mirror"
    subprocess.run(
        [str(CLEANROOM), "osworld", "mirror", str(index), "--made", "--to", str(mirror)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    # When the sample is audited as the page was
    audit = run_audit(
        str(index),
        "--mirror",
        str(mirror),
        "--desktops",
        "2",
        "--markdown",
        run_dir=tmp_path / "run",
        timeout=1500,
    )
    # Then each task run has the page's row, and the task not run says why
    assert audit.proc.returncode in (0, 1), audit.proc.stderr[-3000:]
    published, again = task_rows(PAGE.read_text()), task_rows(audit.proc.stdout)
    ran = [t for ids in SAMPLE.values() for t in ids if t not in NOT_RUN]
    assert {t: again.get(t) for t in ran} == {t: published.get(t) for t in ran}
    for why in NOT_RUN.values():
        assert f"| {why} | 1 |" in audit.proc.stdout
