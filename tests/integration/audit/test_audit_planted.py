"""``cleanroom audit`` on a folder of tasks with planted problems flags exactly those, in
the terminal, in JSON and in the HTML page (read in real headless Chromium)."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from .conftest import OSWORLD, QUICK, RENAME_TASK, TASKS, AuditRun, run_audit

pytestmark = pytest.mark.docker

PLANTED = {
    "good": [],
    "noop-passes": ["passes_with_no_work"],
    "oracle-fails": ["oracle_fails"],
    # The report is compared through whatever the agent left: a link forges it (shared).
    "answers-visible": ["answers_visible", "forgeable_shared"],
    "build-fails": ["build_fails"],
    "link-forged": ["forgeable_shared"],
    "trusts-exit": ["trusts_agent_exit"],
    "trusts-exit-mode": ["trusts_agent_exit"],
}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[AuditRun, Path]:
    """One audit of the whole fixture folder, with its JSON and its HTML page."""
    base = tmp_path_factory.mktemp("audit")
    html = base / "audit.html"
    # Four jobs at once, not one a core: a job spends most of its time waiting on the
    # daemon (builds, starts, stops), and the flags do not depend on how many run at once.
    run = run_audit(
        str(TASKS), "--json", "--html", str(html), *QUICK, "--workers", "4", run_dir=base / "run"
    )
    assert run.proc.returncode == 1, run.proc.stderr[-3000:]
    return run, html


def flaky_expected(task: dict[str, Any]) -> list[str]:
    """What the flaky task's own oracle runs show: disagreeing runs are flaky; runs that
    happened to agree show no flakiness (or a failing oracle, when all failed)."""
    oracle = [r["outcome"]["outcome"] for r in task["runs"] if r["label"].startswith("oracle")]
    if len(set(oracle)) > 1:
        return ["flaky"]
    return ["oracle_fails"] if oracle[0] == "failure" else []


def test_json_flags_exactly_the_planted_problems(mixed: tuple[AuditRun, Path]) -> None:
    run, _ = mixed
    flags = {t["name"]: t["flags"] for t in run.data["tasks"]}
    assert {k: v for k, v in flags.items() if k != "flaky"} == PLANTED
    assert flags["flaky"] == flaky_expected(run.task("flaky"))


def test_each_flag_carries_its_evidence(mixed: tuple[AuditRun, Path]) -> None:
    run, _ = mixed
    (visible,) = [
        f for f in run.task("answers-visible")["findings"] if f["flag"] == "answers_visible"
    ]
    assert "/opt/reference/expected-report.txt" in visible["evidence"]
    assert "tests/expected-report.txt" in visible["evidence"]
    (build,) = run.task("build-fails")["findings"]
    assert "fetching the toolchain" in build["evidence"]
    (noop,) = run.task("noop-passes")["findings"]
    assert "no-op [sealed]: success" in noop["evidence"]


def test_a_task_forged_by_a_link_is_shown_by_the_link_probe_and_held_by_sealed(
    mixed: tuple[AuditRun, Path],
) -> None:
    run, _ = mixed
    task = run.task("link-forged")
    (forged,) = task["findings"]
    assert forged["runs"] == ["link-to-tests: probe link-to-tests [shared]: success, score 1"]
    probes = {(r["label"], r["mode"]): r["outcome"] for r in task["runs"]}
    assert probes[("probe link-to-tests", "sealed")]["reason"] == "tamper"
    # The control: without the linked output the tests fail, so the link did the forging.
    assert probes[("probe remove-linked", "shared")]["outcome"] == "failure"
    assert task["verdict"] == "clean"  # what only a naive verifier lets through


def test_a_task_that_trusts_the_agents_exit_code_is_flagged_by_the_code_probe(
    mixed: tuple[AuditRun, Path],
) -> None:
    run, _ = mixed
    task = run.task("trusts-exit")
    (trusts,) = task["findings"]
    assert trusts["runs"] == ["probe succeed-at-once [sealed]: success, score 1"]
    assert "trust the exit of the agent's code" in trusts["evidence"]
    assert task["verdict"] == "flagged"


def test_the_terminal_summary_of_the_resumed_audit_shows_the_same_flags(
    mixed: tuple[AuditRun, Path],
) -> None:
    run, _ = mixed
    again = run_audit(str(TASKS), *QUICK, run_dir=run.run_dir, timeout=60)
    assert again.proc.returncode == 1
    lines = again.proc.stdout.splitlines()
    for name, flags in PLANTED.items():
        (row,) = [line for line in lines if f" {name} " in line and "│" in line]
        # What only a naive verifier lets through does not fail the audit.
        assert ("flagged" in row) == any(f != "forgeable_shared" for f in flags), row
        for flag in flags:
            assert flag in row
    assert f"results: {run.run_dir}" in again.proc.stdout


def test_the_html_page_shows_the_flags_counts_and_sorts(
    mixed: tuple[AuditRun, Path], chromium: Any
) -> None:
    _, html = mixed
    page = chromium.contexts[0].new_page()
    try:
        page.goto(html.as_uri())
        shown = {
            row.get_attribute("data-task"): (row.get_attribute("data-flags") or "").split()
            for row in page.query_selector_all("table.tasks tbody tr")
        }
        assert {k: v for k, v in shown.items() if k != "flaky"} == PLANTED
        count = page.text_content("tr[data-flag='answers_visible'] td.count")
        assert count is not None and count.strip() == "1"
        page.click("table.tasks th:text('task')")
        page.click("table.tasks th:text('task')")
        order = page.eval_on_selector_all(
            "table.tasks tbody tr", "rows => rows.map(r => r.dataset.task)"
        )
        assert order == sorted(order, reverse=True)
        page.click("a[href^='#job-'] >> text=build-fails")
        assert "fetching the toolchain" in (page.text_content(":target") or "")
    finally:
        page.close()


def test_a_flaky_verifier_is_flagged_flaky_with_every_run(tmp_path: Path) -> None:
    # A fair coin decides each run; sixteen runs all agree with odds of 1 in 32,768 (ten,
    # at 1 in 512, were seen to agree).
    run = run_audit(
        str(TASKS / "flaky"),
        "--json",
        "--repeats",
        "16",
        "--probe",
        "planted-reward-txt",
        run_dir=tmp_path / "run",
    )
    assert run.proc.returncode == 1, run.proc.stderr[-2000:]
    task = run.task("flaky")
    assert task["flags"] == ["flaky"]
    assert len(task["findings"][0]["runs"]) == 16


def test_an_osworld_checker_accepting_a_copy_for_a_rename_is_flagged(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(OSWORLD, tasks)
    shutil.copy(RENAME_TASK, tasks / RENAME_TASK.name)  # the verbatim task, beside its spec
    run = run_audit(str(tasks), "--json", run_dir=tmp_path / "run", timeout=120)
    assert run.proc.returncode == 1, run.proc.stderr[-2000:]
    assert run.task(RENAME_TASK.stem)["flags"] == ["near_miss_accepted"]
    assert run.task("rename-strict")["flags"] == []
    phases = [r["label"] for r in run.task("rename-strict")["runs"]]
    assert phases == ["t0", "oracle", "noop", "near miss 1"]


def test_a_path_with_no_task_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    run = run_audit(str(tmp_path / "empty"), run_dir=tmp_path / "run", timeout=60)
    assert run.proc.returncode == 2
    assert "no task here" in run.proc.stderr


def test_resuming_with_other_settings_is_refused(tmp_path: Path) -> None:
    first = run_audit(str(TASKS / "build-fails"), *QUICK, run_dir=tmp_path / "run", timeout=120)
    assert first.proc.returncode == 1, first.proc.stderr[-2000:]
    again = run_audit(str(TASKS / "build-fails"), "--repeats", "4", run_dir=first.run_dir)
    assert again.proc.returncode == 2
    assert "other settings" in again.proc.stderr


def test_a_ray_address_where_nothing_listens_is_refused_at_once(tmp_path: Path) -> None:
    with socket.socket() as s:  # a loopback port that was free a moment ago
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = run_audit(
        str(TASKS / "good"), "--ray", f"127.0.0.1:{port}", run_dir=tmp_path / "run", timeout=60
    )
    assert run.proc.returncode == 2
    assert f"no Ray cluster at 127.0.0.1:{port}" in run.proc.stderr


# The audit on podman: in `make test-integrations` (sealed's 0 on podman is in every run).
@pytest.mark.integrations
def test_the_audit_on_podman_flags_what_it_flags_on_docker(tmp_path: Path) -> None:
    """`--environment podman`: the same audit through podman's Docker-compatible API."""
    tasks = tmp_path / "tasks"
    for name in ("good", "link-forged"):
        shutil.copytree(TASKS / name, tasks / name)
    run = run_audit(
        str(tasks), "--json", "--environment", "podman", *QUICK, run_dir=tmp_path / "run"
    )
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    assert {t["name"]: t["flags"] for t in run.data["tasks"]} == {
        name: PLANTED[name] for name in ("good", "link-forged")
    }
