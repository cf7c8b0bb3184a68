"""The isolation battery: the contract every isolation test module implements.

A test runs trials. Each trial checks pairs of environments and returns isolation rows
``(test, trial, from_env, to_env, clean|cross|lost)``; its raw evidence (what was typed,
read, saved, screenshot hashes, timings) goes into its own folder in the run folder. A
trial that cannot read its inputs returns ``lost`` rows; a trial that raises is turned
into ``lost`` rows for every pair here, so nothing is ever skipped silently.

The tests live one per module in `isolation.checks`, whose `CHECKS` is the one table of them.
"""

from __future__ import annotations

import json
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any, ClassVar

from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.sweep import SweepJudgement
from cleanroom.core.tokens import RolloutId, Token, mint
from cleanroom.environments.interface import Desktops, Needs, require
from cleanroom.environments.leaky_setups import Leak
from cleanroom.isolation.fault import Fault
from cleanroom.store.rundb import LatencySample, RunStore
from cleanroom.verify_server.client import VerifyClient

# Isolation trials mint tokens with sequence numbers from here up, so they never collide
# with the window's rollouts (which count from 1).
TRIAL_SEQ_BASE = 50_000


@dataclass(frozen=True)
class Schedule:
    """How many trials a test runs in a window, in the soak, and whether it runs by default."""

    window: int
    soak: int
    on_demand: bool = False  # runs only when asked for (or at reduced trials in the demo)


@dataclass
class TrialContext:
    """What a trial may use: the pool, the run database, its window and its evidence folder."""

    pool: Desktops
    store: RunStore
    window: int
    run_dir: Path
    # The run's verify server, for tests that show its pages (observation privacy, which
    # starts a server of its own when there is none).
    verify: VerifyClient | None = None
    # The verify server's database, for the token sweep, which reads what was submitted.
    submissions_db: Path | None = None
    _seq: Iterator[int] = field(default_factory=lambda: count(TRIAL_SEQ_BASE))
    # Every token minted here: only a token the run minted can implicate a rollout, so a
    # run hands every window's context the one set of its own.
    minted: set[str] = field(default_factory=set)
    # The token sweep's judgements of this context's trials, in order: the typed facts
    # behind its rows (the real foreign tokens, the environments' own acts).
    swept: list[SweepJudgement] = field(default_factory=list)

    @property
    def acting_envs(self) -> list[str]:
        """Every environment but the canary, in name order."""
        return [n for n in self.pool.names if n != CANARY_ENV]

    def mint(self, env: str) -> Token:
        """A fresh token for a string this trial will type or set in ``env``."""
        token = mint(RolloutId(env, self.window, next(self._seq)))
        self.minted.add(str(token))
        return token

    def evidence_dir(self, test: str, trial: int) -> Path:
        """The folder for one trial's raw evidence (created)."""
        path = self.run_dir / "evidence" / test / f"w{self.window:03d}-t{trial:03d}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write_evidence(self, test: str, trial: int, name: str, data: Any) -> Path:
        """Write one piece of evidence: bytes as they are, anything else as JSON."""
        path = self.evidence_dir(test, trial) / name
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(json.dumps(data, indent=1, default=str, sort_keys=True))
        return path

    def record_latency(self, test: str, env: str, ms: float, phase: str = "") -> None:
        """Record one timed observation of a bystander (for the report's latency plot)."""
        self.store.add_latency_samples(
            [LatencySample(test, env, time.time(), ms, phase, self.window)]
        )


class IsolationCheck(ABC):
    """One of the isolation tests (tests 1 and 6 are the control and the canary)."""

    name: ClassVar[str]
    number: ClassVar[int]
    schedule: ClassVar[Schedule]
    # The leaky setups and the faults under which this test must report cross: its
    # leaky controls, declared here and nowhere else.
    detects: ClassVar[tuple[Leak, ...]]
    faults: ClassVar[tuple[Fault, ...]] = ()
    # The programs every acting environment must run for this test (a pool without one
    # makes its trials lost); whoever builds a pool for a set of tests takes the union.
    needs: ClassVar[tuple[str, ...]] = ()
    # What this test asks of the desktops' provider (`interface.Capabilities`), checked
    # before its first trial: most type into real programs and read what they saved.
    requires: ClassVar[Needs] = Needs(real_desktops=True)

    @abstractmethod
    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        """Run one trial and return its rows (``lost`` where inputs could not be read)."""

    def pairs(self, ctx: TrialContext) -> list[tuple[str, str]]:
        """The ordered pairs a trial checks (every acting environment against every other)."""
        envs = ctx.acting_envs
        return [(a, b) for a in envs for b in envs if a != b]


def lost_rows(test: IsolationCheck, ctx: TrialContext, trial: int, why: str) -> list[IsolationRow]:
    """A lost row for every pair the trial would have checked."""
    return [
        IsolationRow(test.name, trial, a, b, RowResult.LOST, ctx.window, why[:500])
        for a, b in test.pairs(ctx)
    ]


def run_test(
    test: IsolationCheck, ctx: TrialContext, trials: int, *, first: int = 0
) -> list[IsolationRow]:
    """Run ``trials`` trials numbered from ``first``, store each trial's rows as it ends,
    and return them all.

    A trial that raises becomes lost rows for every pair, with the error in the evidence
    folder: an isolation test never fails silently and never stops the battery. A
    provider that cannot do what the test requires is refused before the first trial
    (`interface.Unsupported`).
    """
    require(ctx.pool.provider, ctx.pool.capabilities, test.requires)
    rows: list[IsolationRow] = []
    for trial in range(first, first + trials):
        try:
            got = test.run_trial(ctx, trial)
            if not got:
                got = lost_rows(test, ctx, trial, "the trial returned no rows")
        except Exception as exc:  # any fault of the trial is a loud lost row, not a crash
            ctx.write_evidence(test.name, trial, "error.txt", traceback.format_exc().encode())
            got = lost_rows(test, ctx, trial, f"{type(exc).__name__}: {exc}")
        ctx.store.add_isolation_rows(got)
        rows.extend(got)
    return rows
