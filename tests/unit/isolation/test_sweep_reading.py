"""The token sweep's reading of places: every form of a token in files, selections and
submissions, each environment's decoding under a budget of its own, and a selection whose
owner never answers read as far as it can be."""

from __future__ import annotations

import base64
import gzip
import io
import zipfile
from pathlib import Path

import pytest

from cleanroom import tree_scan
from cleanroom.core.sweep import CLIPBOARD, HOME, Place
from cleanroom.core.token_forms import Bound
from cleanroom.environments.interface import ClipboardRead
from cleanroom.environments.memory import MemoryDesktops
from cleanroom.isolation.checks.token_sweep import (
    Budgets,
    DecodeBudget,
    read_clipboard,
    read_tree,
)

LEAKED = "env01-w001-r0003-0a0b0c0d"  # env01's token, where env02 keeps its files


def _place(root: Path, env: str) -> Place:
    root.mkdir(parents=True, exist_ok=True)
    return Place(str(root), (env,), HOME)


def _bomb() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("zeros.bin", b"\x00" * (16 << 20))
    return buf.getvalue()


def test_a_home_is_read_for_a_token_in_a_gzip_stream_and_in_base64(tmp_path: Path) -> None:
    home = _place(tmp_path / "env02", "env02")
    (tmp_path / "env02" / "notes.txt.gz").write_bytes(gzip.compress(LEAKED.encode()))
    encoded = base64.b64encode(LEAKED.encode()).decode()
    (tmp_path / "env02" / "blob.json").write_text(f'{{"v": "{encoded}"}}')
    reading = read_tree(home, 0.0)
    found = {(str(h.token), h.source.rsplit("/", 1)[1], h.form) for h in reading.hits}
    assert found == {(LEAKED, "notes.txt.gz", "gzip"), (LEAKED, "blob.json", "base64")}
    assert reading.error is None and reading.unread == ()


def test_a_file_over_the_budget_is_reported_unread_and_the_place_stays_readable(
    tmp_path: Path,
) -> None:
    home = _place(tmp_path / "env02", "env02")
    (tmp_path / "env02" / "bomb.zip").write_bytes(_bomb())
    reading = read_tree(home, 0.0, DecodeBudget(per_file=1 << 20))
    assert reading.error is None
    unread = [(u.bound, u.where.rsplit("/", 1)[1]) for u in reading.unread]
    assert unread[0] == (Bound.FILE_BYTES, "bomb.zip (zip:zeros.bin)")
    assert {bound for bound, _ in unread} == {Bound.FILE_BYTES}


def test_one_environments_bomb_spends_its_own_budget_never_anothers(tmp_path: Path) -> None:
    bomber, other = _place(tmp_path / "env01", "env01"), _place(tmp_path / "env02", "env02")
    for i in range(4):
        (tmp_path / "env01" / f"bomb{i}.zip").write_bytes(_bomb())
    (tmp_path / "env02" / "late.gz").write_bytes(gzip.compress(LEAKED.encode()))
    budgets = Budgets()
    budgets._by[("env01",)] = DecodeBudget(nbytes=8 << 20)  # the bomber's, spent at once
    spent = read_tree(bomber, 0.0, budgets.of(bomber.owners))
    assert {u.bound for u in spent.unread} == {Bound.ENV_BYTES}
    assert [str(h.token) for h in read_tree(other, 0.0, budgets.of(other.owners)).hits] == [LEAKED]


def test_a_large_file_is_decoded_only_up_to_the_cap_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree_scan, "INSPECT_CAP", 4 << 20)
    home = _place(tmp_path / "env02", "env02")
    (tmp_path / "env02" / "big.bin").write_bytes(b"\x00" * (5 << 20) + LEAKED.encode().upper())
    reading = read_tree(home, 0.0)
    assert reading.hits == ()
    assert [u.bound for u in reading.unread] == [Bound.INPUT]


@pytest.fixture
def pool(tmp_path: Path) -> MemoryDesktops:
    pool = MemoryDesktops(tmp_path / "run", envs=2)
    pool.start()
    return pool


def test_a_selection_is_read_for_a_token_in_another_form(pool: MemoryDesktops) -> None:
    pool._env("env02").set_clipboard(LEAKED.upper(), ("CLIPBOARD",))
    reading = read_clipboard(pool, "env02")
    assert [(str(h.token), h.source, h.form) for h in reading.hits] == [
        (LEAKED, "env02:CLIPBOARD", "any case")
    ]


def test_a_silent_owner_is_the_environments_own_and_the_other_selection_is_read(
    pool: MemoryDesktops,
) -> None:
    pool._env("env02").set_clipboard(f"kept {LEAKED}", ("PRIMARY",))
    pool._env("env02").desk.silent.add("CLIPBOARD")  # its program took it and went mute
    reading = read_clipboard(pool, "env02")
    assert reading.place == Place("env02's clipboard", ("env02",), CLIPBOARD)
    assert reading.error is None and reading.unanswered == ("CLIPBOARD",)
    assert [str(h.token) for h in reading.hits] == [LEAKED]


def test_the_tree_scanner_hands_every_file_to_its_hook_once(tmp_path: Path) -> None:
    for i in range(70):
        (tmp_path / f"d{i % 3}").mkdir(exist_ok=True)
        (tmp_path / f"d{i % 3}" / f"f{i}").write_bytes(b"x" * (i + 1))
    (tmp_path / "big").write_bytes(b"y" * (3 << 20))  # streamed past the batch buffer
    seen: list[tuple[str, int, int]] = []

    def hook(path: str, data: memoryview, size: int) -> None:
        seen.append((path, len(data), size))

    tree_scan.scan_tree(tmp_path, workers=2, inspect=hook)
    assert len(seen) == 71 and len({p for p, _, _ in seen}) == 71
    assert (str(tmp_path / "big"), 3 << 20, 3 << 20) in seen
    assert all(n == size for _, n, size in seen)


def test_past_its_deadline_an_environments_files_are_reported_and_not_decoded(
    tmp_path: Path,
) -> None:
    home = _place(tmp_path / "env02", "env02")
    (tmp_path / "env02" / "late.gz").write_bytes(gzip.compress(LEAKED.encode()))
    reading = read_tree(home, 0.0, DecodeBudget(seconds=-1.0))
    assert reading.hits == ()
    assert [u.bound for u in reading.unread] == [Bound.DEADLINE]


def test_a_selection_cut_at_the_read_cap_is_reported_unread_and_its_part_is_read(
    pool: MemoryDesktops, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The display's read stopped at its size cap: what it holds is searched, and the
    # rest is a named blind spot, not an unreadable place.
    def cut(name: str, selection: str = "CLIPBOARD") -> ClipboardRead:
        text = f"head {LEAKED}" if selection == "CLIPBOARD" else None
        return ClipboardRead(selection, text, truncated=selection == "CLIPBOARD")

    monkeypatch.setattr(pool, "read_selection", cut)
    reading = read_clipboard(pool, "env02")
    assert reading.error is None
    assert [str(h.token) for h in reading.hits] == [LEAKED]
    assert [(u.where, u.bound) for u in reading.unread] == [("env02:CLIPBOARD", Bound.INPUT)]
