"""The red-team catalogue through Harbor's generic environment interface (Harbor's docker
environment, `cleanroom redteam --harbor-environment docker`) against the Docker fast
path: every row gets the fast path's outcome, but where `DIFFERENCES` says why not.

`make test` runs a sample that touches every mechanism the generic path adds (the
agent's listing, bound folders brought back, archives downloaded and installed); `make
test-integrations` runs the whole catalogue through both paths side by side.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cleanroom.redteam.matrix import Cell, Matrix
from cleanroom.verifiers.container.modes import Mode

pytestmark = [pytest.mark.docker, pytest.mark.timeout(3000)]

REPO = Path(__file__).resolve().parents[3]
HARBOR_VENV = REPO / ".venv-harbor" / "bin"
CLEANROOM = REPO / ".venv" / "bin" / "cleanroom"

# Where the generic path's outcome is not the fast path's, and why.
DIFFERENCES = {
    # Harbor runs every command in the agent's environment with the shell found there:
    # a shell the agent replaced leaves no archive of its state to take, which is the
    # agent's 0 (the fast path takes the archive through the daemon and scores the
    # unsolved task 0).
    "trojan-bash": ("failure", 0.0, "workspace_broken"),
}
# A verifier in the agent's network namespace (live_processes) needs the fast path:
# refused by name, an exclusion, never a score.
REFUSED_TASKS = {"http-sum": "live_processes"}

# The routes where the generic path does its own work: what the agent planted in, linked
# into or put in place of its reward folder (brought back from a listing), odd files
# (FIFO, device, huge, sparse), names that are not UTF-8, deep trees, links out of the
# work dir, a process left writing, and a replaced shell.
SAMPLE = (
    "planted-reward-txt",
    "background-writer",
    "symlinked-verifier-dir",
    "symlinked-reward-file",
    "readonly-verifier-dir",
    "device-reward",
    "fifo-reward",
    "huge-reward",
    "trojan-bash",
    "deep-workdir",
    "sparse-workdir",
    "nonutf8-folder",
    "workdir-link-folder",
)


def redteam_json(argv: list[str], timeout: float, exits: tuple[int, ...] = (0,)) -> Matrix:
    """The matrix `cleanroom redteam ... --json` prints, its exit code one of ``exits``
    (1: the verdict did not pass, as for a matrix without the demonstrating mode)."""
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(HARBOR_VENV), os.environ.get("PATH", "")]),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode in exits, done.stdout[-2000:] + done.stderr[-4000:]
    return Matrix.from_json(json.loads(done.stdout))


def generic_matrix(
    attacks: tuple[str, ...], timeout: float, exits: tuple[int, ...] = (0,)
) -> Matrix:
    if not (HARBOR_VENV / "cleanroom").is_file():
        pytest.fail("no .venv-harbor with Harbor: run `make setup` (needs Python 3.12+)")
    picked = [arg for a in attacks for arg in ("--attack", a)]
    argv = [str(HARBOR_VENV / "cleanroom"), "redteam", "--harbor-environment", "docker"]
    return redteam_json([*argv, *picked, "--json"], timeout, exits)


def verdict(cell: Cell | None) -> tuple[str | None, float | None, str | None]:
    assert cell is not None
    return (cell.status, cell.score, cell.reason)


def compare(fast: Matrix, generic: Matrix) -> list[str]:
    """Every row whose generic outcome is neither the fast path's nor a documented
    difference."""
    wrong: list[str] = []
    for row in generic.rows:
        got = generic.get(row, Mode.SEALED)
        if row.task in REFUSED_TASKS:
            assert got is not None
            if got.status != "invalid" or REFUSED_TASKS[row.task] not in got.detail:
                wrong.append(f"{row.id}: {got} (expected refused: {REFUSED_TASKS[row.task]})")
            continue
        expected = verdict(fast.get(row, Mode.SEALED))
        if row.attack is not None and row.attack.id in DIFFERENCES:
            expected = DIFFERENCES[row.attack.id]
        if verdict(got) != expected:
            wrong.append(f"{row.id}: generic {verdict(got)}, fast path {expected}; {got}")
    return wrong


def test_a_sample_of_the_catalogue_gives_the_fast_paths_outcomes(matrix: Matrix) -> None:
    """Against the demo's own run of the catalogue on the fast path."""
    generic = generic_matrix(SAMPLE, timeout=900)
    assert {r.attack.id for r in generic.rows if r.attack} == set(SAMPLE)
    assert compare(matrix, generic) == []
    assert generic.summary().sealed_passed


@pytest.mark.integrations
def test_the_whole_catalogue_gives_the_fast_paths_outcomes() -> None:
    fast = redteam_json([str(CLEANROOM), "redteam", "--mode", "sealed", "--json"], 1500, (0, 1))
    # http-sum's honest row is refused on the generic path (REFUSED_TASKS): exit 1.
    generic = generic_matrix((), timeout=2400, exits=(0, 1))
    assert {r.id for r in generic.rows} == {r.id for r in fast.rows}
    assert compare(fast, generic) == []
