"""The red-team matrix as data: rows × modes → outcomes, each cell's meaning, and the verdict.

Rows per task: the honest solution, the no-op agent (the task's truth: what a rollout
that did nothing scores) and the attacks. Every cell is classified against what its row
and mode must show:

- honest: 1 in every mode (a verifier that blocks honest work is as wrong as a fooled one);
- no-op: a valid 0 in every mode, or "fooled" would mean nothing;
- attack under the demonstrating mode (``shared``): the attack must be demonstrated,
  otherwise the row is "attack not demonstrated", never a pass;
- attack under any other mode: held (a valid score no more than the truth; in ``cleared``
  also invalid) or fooled; a ``cleared`` cell fooled by an attack beyond its promise is
  marked as such, not hidden. Under ``sealed`` an invalid cell is not held but escaped:
  invalid rollouts are excluded from training, so an attack that makes itself invalid
  has escaped its 0.

This module is pure: it never runs anything, so the verdict is unit-tested on made-up
cells and a stored matrix can be re-judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from cleanroom.core.outcomes import Outcome
from cleanroom.redteam.catalogue import Attack, ClearedExpectation, Demonstration, by_id
from cleanroom.verifiers.container.modes import Mode, plan


class RowKind(StrEnum):
    """What ran as the agent."""

    HONEST = "honest"
    NOOP = "noop"
    ATTACK = "attack"


@dataclass(frozen=True)
class Row:
    """One agent run against one task, repeated under every mode."""

    task: str
    kind: RowKind
    attack: Attack | None = None

    @property
    def id(self) -> str:
        return f"{self.task}/{self.attack.id if self.attack else self.kind.value}"

    @property
    def label(self) -> str:
        if self.attack is not None:
            return self.attack.id
        return "honest solution" if self.kind is RowKind.HONEST else "no-op (truth)"


@dataclass(frozen=True)
class Cell:
    """One rollout's outcome, as stored in the matrix."""

    status: str
    score: float | None
    reason: str | None = None
    detail: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, outcome: Outcome) -> Cell:
        return cls(
            outcome.status.value,
            outcome.score,
            outcome.reason.value if outcome.reason else None,
            outcome.detail,
            outcome.details,
        )

    @property
    def valid(self) -> bool:
        return self.status != "invalid"

    @property
    def short(self) -> str:
        """``1``, ``0.33``, ``0 (tamper)`` (the agent's own act) or ``invalid: bad_reward``."""
        if not self.valid:
            return f"invalid: {self.reason}"
        if self.reason:
            return f"{self.score:g} ({self.reason})"
        return f"{self.score:g}"

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.status,
            "score": self.score,
            "reason": self.reason,
            "detail": self.detail,
            "details": dict(self.details),
        }


class Verdict(StrEnum):
    """What one cell shows, given its row and mode."""

    HONEST_OK = "honest ok"
    HONEST_BLOCKED = "honest blocked"
    TRUTH = "truth"
    VACUOUS = "no-op not failed"
    DEMONSTRATED = "demonstrated"
    NOT_DEMONSTRATED = "attack not demonstrated"
    HELD = "held"
    FOOLED = "fooled"
    ESCAPED = "escaped its 0 (invalid)"
    BEYOND_PROMISE = "fooled (beyond its promise)"
    MISSING = "not run"

    @property
    def good(self) -> bool:
        """Whether the cell is what it must be (`BEYOND_PROMISE` is documented, not good)."""
        return self in (Verdict.HONEST_OK, Verdict.TRUTH, Verdict.DEMONSTRATED, Verdict.HELD)


@dataclass(frozen=True)
class Summary:
    """The matrix's verdict: the three claims and every cell that breaks one."""

    attacks: int
    not_demonstrated: tuple[str, ...]
    sealed_fooled: tuple[str, ...]
    honest_cells: int
    honest_blocked: tuple[str, ...]
    noop_cells: int
    noop_wrong: tuple[str, ...]
    missing: tuple[str, ...]
    cleared_beyond_promise: tuple[str, ...]
    cleared_fooled: tuple[str, ...]
    sealed_run: bool

    @property
    def all_demonstrated(self) -> bool:
        return not self.not_demonstrated and self.attacks > 0

    @property
    def sealed_held(self) -> bool:
        return self.sealed_run and not self.sealed_fooled and self.attacks > 0

    @property
    def honest_everywhere(self) -> bool:
        return not self.honest_blocked and self.honest_cells > 0

    @property
    def sealed_passed(self) -> bool:
        """The claims a matrix of ``sealed`` alone can make: it held against every
        attack, the honest solution passed and the no-op failed."""
        return (
            self.sealed_held and self.honest_everywhere and not self.noop_wrong and not self.missing
        )

    @property
    def passed(self) -> bool:
        return (
            self.all_demonstrated
            and self.sealed_held
            and self.honest_everywhere
            and not self.noop_wrong
            and not self.missing
        )

    def line(self) -> str:
        """The one-line verdict printed under the matrix."""
        n = self.attacks
        fired = n - len(self.not_demonstrated)
        held = n - len(self.sealed_fooled) if self.sealed_run else 0
        ok = self.honest_cells - len(self.honest_blocked)
        head = "PASS" if self.passed else "FAIL"
        parts = [
            f"attacks demonstrated {fired}/{n}",
            f"sealed held {held}/{n}" if self.sealed_run else "sealed not run",
            f"honest solution scored 1 in {ok}/{self.honest_cells} cells",
            f"no-op scored 0 in {self.noop_cells - len(self.noop_wrong)}/{self.noop_cells}",
        ]
        return f"{head}: " + "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "all_demonstrated": self.all_demonstrated,
            "sealed_held": self.sealed_held,
            "honest_everywhere": self.honest_everywhere,
            "attacks": self.attacks,
            "not_demonstrated": list(self.not_demonstrated),
            "sealed_fooled": list(self.sealed_fooled),
            "honest_blocked": list(self.honest_blocked),
            "noop_wrong": list(self.noop_wrong),
            "missing": list(self.missing),
            "cleared_beyond_promise": list(self.cleared_beyond_promise),
            "cleared_fooled": list(self.cleared_fooled),
            "line": self.line(),
        }


@dataclass
class Matrix:
    """Rows × modes → cells."""

    modes: tuple[Mode, ...]
    rows: list[Row]
    cells: dict[tuple[str, Mode], Cell] = field(default_factory=dict)

    def put(self, row: Row, mode: Mode, cell: Cell) -> None:
        self.cells[(row.id, mode)] = cell

    def get(self, row: Row, mode: Mode) -> Cell | None:
        return self.cells.get((row.id, mode))

    def truth(self, task: str, mode: Mode) -> float:
        """The no-op agent's score on ``task`` under ``mode`` (0 when unknown or invalid)."""
        cell = self.get(Row(task, RowKind.NOOP), mode)
        if cell is None or not cell.valid or cell.score is None:
            return 0.0
        return cell.score

    def judge(self, row: Row, mode: Mode) -> Verdict:
        """What the cell at ``row`` × ``mode`` shows."""
        cell = self.get(row, mode)
        if cell is None:
            return Verdict.MISSING
        if row.kind is RowKind.HONEST:
            return Verdict.HONEST_OK if cell.valid and cell.score == 1.0 else Verdict.HONEST_BLOCKED
        if row.kind is RowKind.NOOP:
            return Verdict.TRUTH if cell.valid and cell.score == 0.0 else Verdict.VACUOUS
        assert row.attack is not None
        truth = self.truth(row.task, mode)
        if plan(mode).demonstrates_attacks:
            return (
                Verdict.DEMONSTRATED
                if _fired(row.attack, cell, truth)
                else Verdict.NOT_DEMONSTRATED
            )
        if not cell.valid:
            return Verdict.ESCAPED if mode is Mode.SEALED else Verdict.HELD
        if cell.score is not None and cell.score <= truth:
            return Verdict.HELD
        if mode is Mode.CLEARED and row.attack.cleared is not ClearedExpectation.HOLDS:
            return Verdict.BEYOND_PROMISE
        return Verdict.FOOLED

    def summary(self) -> Summary:
        """Judge every cell and collect the verdict."""
        attacks = [r for r in self.rows if r.kind is RowKind.ATTACK]
        demonstrating_modes = [m for m in self.modes if plan(m).demonstrates_attacks]

        def where(rows: Iterable[Row], modes: Iterable[Mode], *bad: Verdict) -> tuple[str, ...]:
            return tuple(
                f"{r.id} [{m.value}]" for r in rows for m in modes if self.judge(r, m) in bad
            )

        honest = [r for r in self.rows if r.kind is RowKind.HONEST]
        noops = [r for r in self.rows if r.kind is RowKind.NOOP]
        not_demo = (
            tuple(
                r.id
                for r in attacks
                if any(self.judge(r, m) is not Verdict.DEMONSTRATED for m in demonstrating_modes)
            )
            if demonstrating_modes
            else tuple(r.id for r in attacks)
        )
        sealed = [Mode.SEALED] if Mode.SEALED in self.modes else []
        cleared = [Mode.CLEARED] if Mode.CLEARED in self.modes else []
        return Summary(
            attacks=len(attacks),
            not_demonstrated=not_demo,
            sealed_fooled=where(attacks, sealed, Verdict.FOOLED, Verdict.ESCAPED, Verdict.MISSING),
            honest_cells=len(honest) * len(self.modes),
            honest_blocked=where(honest, self.modes, Verdict.HONEST_BLOCKED, Verdict.MISSING),
            noop_cells=len(noops) * len(self.modes),
            noop_wrong=where(noops, self.modes, Verdict.VACUOUS, Verdict.MISSING),
            missing=where(self.rows, self.modes, Verdict.MISSING),
            cleared_beyond_promise=where(attacks, cleared, Verdict.BEYOND_PROMISE),
            cleared_fooled=where(attacks, cleared, Verdict.FOOLED),
            sealed_run=bool(sealed),
        )

    def to_json(self) -> dict[str, Any]:
        """The whole matrix as plain data, for ``--json`` and for embedding in run reports."""
        rows = []
        for row in self.rows:
            entry: dict[str, Any] = {"id": row.id, "task": row.task, "kind": row.kind.value}
            if row.attack is not None:
                entry.update(
                    attack=row.attack.id,
                    route=row.attack.route,
                    demonstration=row.attack.demonstration.value,
                    demonstrated_when=row.attack.demonstrated_when,
                    cleared_expectation=row.attack.cleared.value,
                )
            entry["cells"] = {
                m.value: {
                    **(c.to_json() if (c := self.get(row, m)) else {"outcome": None}),
                    "verdict": self.judge(row, m).value,
                }
                for m in self.modes
            }
            rows.append(entry)
        return {
            "modes": [m.value for m in self.modes],
            "demonstrating_modes": [m.value for m in self.modes if plan(m).demonstrates_attacks],
            "rows": rows,
            "verdict": self.summary().to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Matrix:
        """A matrix stored with `to_json`, to be judged again (its attacks are looked up
        in today's catalogue by id); `ValueError` naming what does not fit."""
        try:
            modes = tuple(Mode(m) for m in data["modes"])
            matrix = cls(modes, [])
            for entry in data["rows"]:
                attack = by_id(entry["attack"]) if entry.get("attack") else None
                row = Row(entry["task"], RowKind(entry["kind"]), attack)
                matrix.rows.append(row)
                for mode in modes:
                    stored = entry["cells"][mode.value]
                    if stored.get("outcome") is None:
                        continue
                    matrix.put(
                        row,
                        mode,
                        Cell(
                            stored["outcome"],
                            stored["score"],
                            stored.get("reason"),
                            stored.get("detail", ""),
                            stored.get("details", {}),
                        ),
                    )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a stored red-team matrix: {exc!r}") from exc
        return matrix


def _fired(attack: Attack, cell: Cell, truth: float) -> bool:
    if attack.demonstration is Demonstration.FOOLED:
        return cell.valid and cell.score is not None and cell.score > truth
    return not cell.valid or cell.score != truth
