"""What one lease may submit: a count and a byte budget, kept in the server's memory.

A program of an environment can post to its lease's form as fast as the server answers;
without a budget every body lands in the database on the host's disk and in the window's
sweep (369 MiB in 30 s once). Pure: the endpoint charges each submission before storing
it and refuses it when the charge would pass the budget.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

# Submissions one lease may store, and the bytes of their bodies together. A rollout
# submits its form a few times; the durability test sends hundreds through one lease.
MAX_SUBMISSIONS_PER_LEASE = 4096
MAX_SUBMITTED_BYTES_PER_LEASE = 8 * 1024 * 1024


class Overrun(enum.Enum):
    """Which part of a lease's budget a refused submission would have passed."""

    COUNT = "count"
    BYTES = "bytes"


@dataclass(frozen=True)
class LeaseBudget:
    """The most one lease may submit."""

    submissions: int = MAX_SUBMISSIONS_PER_LEASE
    nbytes: int = MAX_SUBMITTED_BYTES_PER_LEASE


@dataclass
class _Spent:
    submissions: int
    nbytes: int


class SubmissionBudgets:
    """What each lease has spent; `charge` takes a submission or names the overrun."""

    def __init__(self, budget: LeaseBudget | None = None) -> None:
        self.budget = budget or LeaseBudget()
        self._spent: dict[str, _Spent] = {}

    def known(self, lease_id: str) -> bool:
        """Whether this lease's spending is held (else seed it with `seed`)."""
        return lease_id in self._spent

    def seed(self, lease_id: str, submissions: int, nbytes: int) -> None:
        """Start a lease's account from what is already stored (a restarted server)."""
        self._spent[lease_id] = _Spent(submissions, nbytes)

    def charge(self, lease_id: str, nbytes: int) -> Overrun | None:
        """Count a submission of ``nbytes`` against the lease, or, when it would pass the
        budget, count nothing and say which part it would pass."""
        spent = self._spent.setdefault(lease_id, _Spent(0, 0))
        if spent.submissions + 1 > self.budget.submissions:
            return Overrun.COUNT
        if spent.nbytes + nbytes > self.budget.nbytes:
            return Overrun.BYTES
        spent.submissions += 1
        spent.nbytes += nbytes
        return None
