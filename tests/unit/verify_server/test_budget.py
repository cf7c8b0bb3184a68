"""A lease's submission budget: a count and a byte total, each refused once passed."""

from __future__ import annotations

from cleanroom.verify_server.budget import LeaseBudget, Overrun, SubmissionBudgets


def test_submissions_within_the_budget_are_taken() -> None:
    budgets = SubmissionBudgets(LeaseBudget(submissions=3, nbytes=100))
    assert [budgets.charge("a", 10) for _ in range(3)] == [None, None, None]


def test_one_submission_past_the_count_is_refused_as_count() -> None:
    budgets = SubmissionBudgets(LeaseBudget(submissions=2, nbytes=100))
    budgets.charge("a", 1)
    budgets.charge("a", 1)
    assert budgets.charge("a", 1) is Overrun.COUNT


def test_a_body_that_would_pass_the_bytes_is_refused_and_not_counted() -> None:
    budgets = SubmissionBudgets(LeaseBudget(submissions=10, nbytes=100))
    assert budgets.charge("a", 60) is None
    assert budgets.charge("a", 60) is Overrun.BYTES
    assert budgets.charge("a", 40) is None  # the refused one spent nothing


def test_each_lease_has_its_own_budget() -> None:
    budgets = SubmissionBudgets(LeaseBudget(submissions=1, nbytes=100))
    assert budgets.charge("a", 1) is None
    assert budgets.charge("a", 1) is Overrun.COUNT
    assert budgets.charge("b", 1) is None


def test_a_seeded_lease_starts_from_what_is_stored() -> None:
    budgets = SubmissionBudgets(LeaseBudget(submissions=5, nbytes=100))
    assert not budgets.known("a")
    budgets.seed("a", 5, 10)
    assert budgets.known("a")
    assert budgets.charge("a", 1) is Overrun.COUNT
