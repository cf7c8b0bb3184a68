"""``cleanroom audit examples/tasks``: every example task, whichever exist, is sound."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import EXAMPLES, QUICK, run_audit

# Every example task through every probe: a long run of what test_audit_planted.py
# samples, so `make test-integrations` runs it.
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.integrations]


@pytest.mark.timeout(1200)  # the audit's own limit is 900 s
def test_the_example_tasks_come_out_with_no_flag_of_their_own(tmp_path: Path) -> None:
    # Four jobs at once: the jobs wait on the Docker daemon more than on the two cores.
    run = run_audit(
        str(EXAMPLES), "--json", *QUICK, "--workers", "4", run_dir=tmp_path / "run", timeout=900
    )
    assert run.proc.returncode == 0, run.proc.stdout[-3000:] + run.proc.stderr[-3000:]
    examples = sorted(p.name for p in EXAMPLES.iterdir() if (p / "task.toml").is_file())
    tasks = run.data["tasks"]
    assert sorted(t["name"] for t in tasks) == examples
    for task in tasks:
        # What only the naive verifier lets through (forgeable_shared) is expected there.
        own = [f for f in task["findings"] if f["severity"] != "naive"]
        assert task["verdict"] == "clean" and own == [], task
    # word-tally's tests compute their reference answer into /tmp: the scratch probe
    # links the oracle's output to it, which fools the naive verifier and not sealed.
    (tally,) = [t for t in tasks if t["name"] == "word-tally"]
    runs = {(r["label"], r["mode"]): r["outcome"] for r in tally["runs"]}
    forged = [f for f in tally["findings"] if f["flag"] == "forgeable_shared"]
    assert any("link-to-scratch" in line for f in forged for line in f["runs"]), tally
    assert runs[("probe link-to-scratch", "sealed")]["outcome"] == "failure", tally
    assert runs[("probe remove-scratch-linked", "shared")]["outcome"] == "failure", tally
    # http-sum's tests ask a reference service by name: the names probe sends every name
    # in the agent's hosts file nowhere, which the naive verifier follows and sealed not.
    (http,) = [t for t in tasks if t["name"] == "http-sum"]
    names = {(r["label"], r["mode"]): r["outcome"]["outcome"] for r in http["runs"]}
    assert names[("probe names-nowhere", "shared")] == "failure", http
    assert names[("probe names-nowhere", "sealed")] == "success", http
    assert any("/etc/hosts" in f["evidence"] for f in http["findings"]), http
    # commit-total's tests run git status in the agent's repository, capturing what git
    # prints: the configured-tools probe's mark still reaches their output.
    (commit,) = [t for t in tasks if t["name"] == "commit-total"]
    forged = [f for f in commit["findings"] if f["flag"] == "forgeable_shared"]
    assert any("configured-tools" in line for f in forged for line in f["runs"]), commit
