"""A node's evidence files reach the driver's run folder: new and changed files only,
links never followed, a FIFO never waited on, nothing written outside the node's folder."""

from __future__ import annotations

import os
from pathlib import Path

from cleanroom.cluster.evidence import EvidenceBatch, evidence_since, keep_evidence


def _node_folder(tmp_path: Path) -> Path:
    run = tmp_path / "node"
    (run / "evidence" / "clipboard" / "w001-t000").mkdir(parents=True)
    (run / "evidence" / "clipboard" / "w001-t000" / "clipboard.json").write_text("{}")
    (run / "control-evidence.json").write_text('{"fired": true}')
    (run / "run.sqlite").write_text("not evidence")
    (tmp_path / "secret").write_text("outside")
    os.symlink(tmp_path / "secret", run / "evidence" / "link.json")
    os.mkfifo(run / "evidence" / "fifo")
    return run


def test_new_files_are_sent_once_and_changed_ones_again(tmp_path: Path) -> None:
    run = _node_folder(tmp_path)
    first = evidence_since(run, {})
    sent = dict(first.files)
    assert set(sent) == {"control-evidence.json", "evidence/clipboard/w001-t000/clipboard.json"}
    assert set(first.skipped) == {"evidence/link.json", "evidence/fifo"}
    assert evidence_since(run, first.seen).files == []
    (run / "control-evidence.json").write_text('{"fired": false, "again": 1}')
    again = evidence_since(run, first.seen)
    assert [rel for rel, _ in again.files] == ["control-evidence.json"]


def test_the_driver_keeps_them_under_the_nodes_folder_and_nowhere_else(tmp_path: Path) -> None:
    run = _node_folder(tmp_path)
    driver = tmp_path / "driver"
    batch = evidence_since(run, {})
    batch.files.append(("../../escaped.txt", b"x"))
    assert keep_evidence(driver, "host/abc", batch) == 2
    kept = driver / "nodes" / "host-abc"
    assert (kept / "control-evidence.json").read_text() == '{"fired": true}'
    assert (kept / "evidence/clipboard/w001-t000/clipboard.json").exists()
    assert not (tmp_path / "escaped.txt").exists() and not (driver / "escaped.txt").exists()
    assert keep_evidence(driver, "host/abc", EvidenceBatch()) == 0
