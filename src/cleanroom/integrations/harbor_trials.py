"""The outcomes `SealedVerifier` recorded in Harbor's trial folders, read back and counted.

Harbor itself keeps only a reward or an exception per trial, and the loops that drive
Harbor's trials (SkyRL's Harbor generator, rLLM's Harbor runtime, ``harbor run`` jobs)
collapse an exception into a retry, a mask or a 0. `SealedVerifier` writes each
verification's whole outcome into its trial's folder (``cleanroom-outcome.json``, one per
step in a multi-step task), so a run can count, per batch, the agent's forging attempts
by reason and what was excluded for the infrastructure (`tally_trials`).

Only the top level of each trial folder is read: the folders below it (``agent/``,
``verifier/``, ``artifacts/``) are bound into the agent's container, and a file the agent
wrote there is never taken for an outcome. Each file is read without following a link,
without waiting on a FIFO and up to a cap.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from cleanroom.core.outcomes import Outcome
from cleanroom.core.tally import RewardTally
from cleanroom.host_files import NotARegularFile, read_beneath

# The names SealedVerifier gives its records in a trial folder.
OUTCOME_PREFIX = "cleanroom-outcome"
# An outcome file is small; its details are capped when written.
OUTCOME_CAP_BYTES = 4 << 20
# At most this many trial folders are read from one folder.
MAX_TRIALS = 100_000

__all__ = ["TrialOutcome", "UnreadableOutcome", "tally_trials", "trial_outcomes"]


@dataclass(frozen=True)
class TrialOutcome:
    """One verification's outcome, with the trial folder and the file it came from."""

    trial: str
    file: str
    outcome: Outcome


@dataclass(frozen=True)
class UnreadableOutcome:
    """A record that could not be read back as an outcome, and why."""

    trial: str
    file: str
    error: str


def trial_outcomes(trials_dir: Path) -> tuple[list[TrialOutcome], list[UnreadableOutcome]]:
    """The outcomes recorded in each trial folder directly under ``trials_dir`` (Harbor's
    ``trials_dir``, or one job's folder of ``harbor run``), in name order, and the
    records that could not be read."""
    found: list[TrialOutcome] = []
    unreadable: list[UnreadableOutcome] = []
    with os.scandir(trials_dir) as entries:
        trials = sorted(
            (e.name for e in entries if e.is_dir(follow_symlinks=False)),
        )[:MAX_TRIALS]
    for trial in trials:
        folder = trials_dir / trial
        try:
            with os.scandir(folder) as entries:
                names = sorted(
                    e.name
                    for e in entries
                    if e.name.startswith(OUTCOME_PREFIX) and e.name.endswith(".json")
                )
        except OSError as exc:
            unreadable.append(UnreadableOutcome(trial, "", f"{exc.strerror or exc}"))
            continue
        for name in names:
            try:
                data = json.loads(read_beneath(trials_dir, folder / name, OUTCOME_CAP_BYTES))
                found.append(TrialOutcome(trial, name, Outcome.from_json(data)))
            except (OSError, NotARegularFile, ValueError) as exc:
                unreadable.append(UnreadableOutcome(trial, name, str(exc)))
    return found, unreadable


def tally_trials(trials_dir: Path) -> RewardTally:
    """The counts of every outcome recorded under ``trials_dir`` (see `trial_outcomes`);
    a record that cannot be read is not counted (`trial_outcomes` names it)."""
    counted = RewardTally()
    for record in trial_outcomes(trials_dir)[0]:
        counted.add(record.outcome)
    return counted
