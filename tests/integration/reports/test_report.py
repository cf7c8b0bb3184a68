"""The report reads a run, refuses the number without a fired control, and renders it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from cleanroom.core.canary import CanarySample, ConsoleSample
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.outcomes import Outcome
from cleanroom.core.publish import ControlResult, Publication, Refusal
from cleanroom.core.tokens import mint
from cleanroom.reports.html import render_html
from cleanroom.reports.model import build_report
from cleanroom.reports.text import render_text
from cleanroom.store.rundb import LatencySample, LeakyControlResult, RunStore, WatchRecord

CLI = Path(sys.executable).with_name("cleanroom")
FIRED = ControlResult(5, 10, 3, 10)


def make_run(
    path: Path,
    *,
    control: ControlResult | None,
    lost: bool = False,
    proven: bool = True,
    meta: dict[str, object] | None = None,
) -> Path:
    meta = {"machine": {"kernel": "Linux test"}, **(meta or {})}
    with RunStore.create(path, meta=meta) as store:
        for env in ("env00", "env01", "env02"):
            store.add_environment(env)
        store.open_window(1, started_at=1000.0)
        for env, seq in (("env01", 1), ("env02", 2)):
            token = mint(f"{env}-w001-r{seq:04d}")
            store.start_rollout(token, "writer", started_at=1001.0)
            store.finish_rollout(token.rollout_id, Outcome.success(), ended_at=1500.0)
        rows = [
            IsolationRow("clipboard", t, "env01", "env02", RowResult.CLEAN, 1) for t in range(4)
        ]
        if lost:
            rows.append(IsolationRow("keyboard_storm", 0, "env02", "env01", RowResult.LOST, 1))
        store.add_isolation_rows(rows)
        store.close_window(1, ended_at=1000.0 + 1800)
        if control is not None:
            store.add_control_result(control)
        if proven:
            store.add_leaky_control(LeakyControlResult("clipboard", "shared-display", True, 2, 1))
            store.add_leaky_control(LeakyControlResult("keyboard_storm", "shared-home", True, 2, 1))
        store.finish_run()
    return path


def test_a_clean_run_with_a_fired_control_publishes_its_number(tmp_path: Path) -> None:
    with RunStore.open(make_run(tmp_path / "r", control=FIRED), owner=False) as store:
        report = build_report(store)
    assert isinstance(report.verdict, Publication)
    assert report.environments == ["env01", "env02"]  # the canary does not act
    assert report.env_hours == pytest.approx(1.0)  # half an hour, two environments
    assert report.checks["clipboard"]["trials"] == 4
    assert report.machine == {"kernel": "Linux test"}


def test_the_report_refuses_a_zero_when_the_control_did_not_fire(tmp_path: Path) -> None:
    dud = ControlResult(0, 10, 4, 10)
    with RunStore.open(make_run(tmp_path / "r", control=dud), owner=False) as store:
        report = build_report(store)
    assert isinstance(report.verdict, Refusal)
    assert "did not fire" in report.verdict.reason


def test_a_lost_row_fails_its_window_and_refuses_the_number(tmp_path: Path) -> None:
    with RunStore.open(make_run(tmp_path / "r", control=FIRED, lost=True), owner=False) as store:
        report = build_report(store)
    assert isinstance(report.verdict, Refusal)
    assert report.windows[0].failure is not None
    assert report.verdict.failed_windows == [1]


def test_a_check_not_proven_in_the_run_refuses_the_number_and_says_so(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r", control=FIRED, proven=False)
    with RunStore.open(run, owner=False) as store:
        report = build_report(store)
    assert isinstance(report.verdict, Refusal)
    assert "were not proven in this run (clipboard)" in report.verdict.reason
    assert "clipboard: not proven in this run, so nothing is claimed for it" in report.not_claimed


def test_a_run_without_its_leaky_controls_refuses_and_names_the_flag(tmp_path: Path) -> None:
    meta: dict[str, object] = {"config": {"leaky_controls": False, "trials_scale": 0.1}}
    run = make_run(tmp_path / "r", control=FIRED, proven=False, meta=meta)
    with RunStore.open(run, owner=False) as store:
        report = build_report(store)
    assert isinstance(report.verdict, Refusal)
    assert "--no-leaky-controls" in report.verdict.reason
    assert any("0.1x the planned trials" in line for line in report.not_claimed)


def test_a_run_at_reduced_trials_says_so_in_its_number(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r", control=FIRED, meta={"config": {"trials_scale": 0.1}})
    with RunStore.open(run, owner=False) as store:
        report = build_report(store)
        html = render_html(report, [])
    assert isinstance(report.verdict, Publication)
    assert "at 0.1x the planned trials" in report.verdict.text
    assert "at 0.1x the planned trials" in html


def test_the_html_report_is_one_self_contained_file(tmp_path: Path) -> None:
    with RunStore.open(make_run(tmp_path / "r", control=FIRED), owner=False) as store:
        html = render_html(build_report(store), store.canary_samples())
    assert "<svg" in html
    assert "Isolation:" in html and "positive control" in html.lower()
    # Nothing is fetched from anywhere: no external scripts, styles, images or fonts.
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)


def test_the_report_command_exits_by_the_verdict_and_prints_json(tmp_path: Path) -> None:
    published = make_run(tmp_path / "ok", control=FIRED)
    refused = make_run(tmp_path / "no", control=None)
    ok = subprocess.run([str(CLI), "report", str(published), "--json"], capture_output=True,
                        text=True, timeout=60)  # fmt: skip
    no = subprocess.run([str(CLI), "report", str(refused), "--html", str(tmp_path / "r.html")],
                        capture_output=True, text=True, timeout=60)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["isolation"]["published"] is True
    assert no.returncode == 1
    assert "refused" in no.stdout
    assert (tmp_path / "r.html").read_text().startswith("<!doctype html>")


def test_the_report_command_names_a_folder_without_a_run(tmp_path: Path) -> None:
    proc = subprocess.run([str(CLI), "report", str(tmp_path)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 4  # a usage error, not an outcome
    assert "no run database" in proc.stderr


def test_leaky_controls_say_which_tests_are_proven_and_which_are_not(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r", control=FIRED)
    with RunStore.open(run) as store:
        store.add_leaky_control(LeakyControlResult("clipboard", "shared-clipboard", True, 6, 2))
        store.add_leaky_control(LeakyControlResult("clipboard", "shared-home", False, 6, 0))
        store.add_leaky_control(LeakyControlResult("dialog_steal", "shared-home", False, 6, 0))
        store.add_latency_samples([LatencySample("dialog_steal", "env02", 1.0, 40.0, "before")])
    with RunStore.open(run, owner=False) as store:
        report = build_report(store)
        html = render_html(report, [])
    assert report.proven == {
        "clipboard": ["shared-display", "shared-clipboard"],
        "keyboard_storm": ["shared-home"],
        "dialog_steal": [],
    }
    assert "did not fire" in html and "shared-clipboard" in html
    assert html.count("<svg") == 2  # the timeline and the latency plot


def test_a_red_team_matrix_in_the_run_folder_is_embedded(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r", control=FIRED)
    matrix = {
        "modes": ["shared", "cleared", "sealed"], "demonstrating_modes": "shared",
        "rows": [{"id": "fix-median/planted-reward-txt", "cells": {
            "shared": {"outcome": "success", "score": 1.0, "verdict": "demonstrated"},
            "cleared": {"outcome": "failure", "score": 0.0, "verdict": "held"},
            "sealed": {"outcome": "invalid", "reason": "tamper", "score": None,
                       "verdict": "held"}}}],
        "verdict": {"line": "PASS: controls fired 1/1"},
    }  # fmt: skip
    (run / "redteam.json").write_text(json.dumps(matrix))
    out = tmp_path / "r.html"
    subprocess.run([str(CLI), "report", str(run), "--html", str(out)], capture_output=True,
                   timeout=60, check=False)  # fmt: skip
    page = out.read_text()
    assert "red-team matrix" in page and "PASS: controls fired 1/1" in page
    assert "invalid: tamper" in page


def _watched_run(path: Path, *, parked: WatchRecord) -> Path:
    run = make_run(path, control=FIRED)
    with RunStore.open(run) as store:
        store.set_watch(parked)
        # env00 looked at every 2 s, except for a 20 s blind spot in the middle.
        for at in [*range(1000, 1901, 2), *range(1920, 2801, 2)]:
            store.add_canary_sample(CanarySample(float(at), True, "t", "w", "c", window=1))
            if parked.active:
                store.add_console_sample(ConsoleSample(float(at), True, "pane", 0, window=1))
        store.add_isolation_rows(
            [IsolationRow("parked_console", 3, "env02", "env00", RowResult.CROSS, 1)]
        )
    return run


def test_the_report_shows_the_largest_canary_gap_and_the_parked_console(tmp_path: Path) -> None:
    run = _watched_run(tmp_path / "r", parked=WatchRecord("parked_console", True))
    with RunStore.open(run, owner=False) as store:
        report = build_report(store)
        html = render_html(report, store.canary_samples())
    console = Console(record=True, width=250)
    render_text(report, console)
    text = console.export_text()
    data = report.to_json()
    assert report.windows[0].canary_gap_s == 20.0 and report.windows[0].console_gap_s == 20.0
    assert report.parked.active and report.parked.events == 1
    assert data["parked_console"]["largest_gap_s"] == 20.0
    assert data["canary_gap_tolerance_s"] == 6.0 and data["windows"][0]["canary_gap_s"] == 20.0
    assert "Parked console: active" in text and "20.0 s" in text and "over 6 s" in text
    assert "Parked console" in html and "20.0 s" in html and "1 event(s)" in html


def test_a_parked_console_that_could_not_start_is_said_not_active(tmp_path: Path) -> None:
    why = "ConsoleUnavailable: tmux did not start in env00"
    run = _watched_run(tmp_path / "r", parked=WatchRecord("parked_console", False, why))
    with RunStore.open(run, owner=False) as store:
        report = build_report(store)
        html = render_html(report, [])
    console = Console(record=True, width=250)
    render_text(report, console)
    assert not report.parked.active and report.windows[0].console_gap_s is None
    assert f"Parked console: not active ({why})" in console.export_text()
    assert f"not active ({why})" in html and report.to_json()["parked_console"]["active"] is False
