"""The gold state of an OSWorld task, as far as its task file alone gives it (pure).

An OSWorld task names no oracle, but many name their answer: a metric that compares the
file the agent left (a ``vm_file`` result getter) with an expected file (a ``cloud_file``
from the dataset, or a ``vm_file`` the setup put in the guest). That expected file,
placed where the result getter reads it, is a state the checker must pass. An infeasible
task's gold state is its last action being ``FAIL``; it must score 0 otherwise.

`gold_plan` says which files go where, or why the task has no gold state of this kind
(`NoGold`): a metric whose result is not a file, or whose expected value is a rule.
With ``conj: and`` (or a single metric) every call must be such a pair; with ``or`` one
is enough, and only those are placed.

Where the task's own setup downloads the file the result getter reads (the document the
agent is to edit, which the setup then opens in its app), the gold state is made by that
download fetching the expected file instead (`gold_setup`): the app then holds the gold
document, as after an agent's edit, and a postconfig step that saves it (``ctrl+s``)
saves the gold one. Any other expected file is placed after the setup.
"""

from __future__ import annotations

import copy
import posixpath
from dataclasses import dataclass
from typing import Any

from cleanroom.verifiers.osworld.evaluator import FAIL
from cleanroom.verifiers.osworld.task import GetterSpec, MetricCall, Task

RESULT_FILE_GETTERS = frozenset({"vm_file"})
EXPECTED_FILE_GETTERS = frozenset({"cloud_file", "vm_file"})


@dataclass(frozen=True)
class GoldFile:
    """One expected file and where the result getter reads the agent's: ``source`` is a
    dataset URL (``cloud_file``, fetched as the task's files are) or a guest path
    (``vm_file``, read after the setup); ``target`` is the result getter's guest path."""

    source_getter: str
    source: str
    target: str


@dataclass(frozen=True)
class GoldPlan:
    """The gold state: files to place, then the last action (None for no action)."""

    files: tuple[GoldFile, ...] = ()
    last_action: str | None = None

    def describe(self) -> str:
        """A few words for the table and the evidence."""
        if self.last_action is not None:
            return f"the last action {self.last_action}"
        placed = ", ".join(f"{f.source} -> {f.target}" for f in self.files)
        return f"the expected file placed where the result getter reads it ({placed})"


@dataclass(frozen=True)
class NoGold:
    """Why a task has no gold state the audit can make from its file."""

    why: str


def gold_plan(task: Task) -> GoldPlan | NoGold:
    """The task's gold state, or why it has none."""
    evaluator = task.evaluator
    if evaluator.infeasible:
        return GoldPlan(last_action=FAIL)
    files: list[GoldFile] = []
    lacking: list[str] = []
    for index, call in enumerate(evaluator.calls):
        pairs = _file_pairs(call)
        if isinstance(pairs, str):
            lacking.append(f"call {index} ({call.func}): {pairs}")
        else:
            files += pairs
    if not files or (lacking and (not evaluator.is_list or evaluator.conj == "and")):
        return NoGold("; ".join(lacking) or "no metric compares a file with an expected one")
    # An expected file that a postconfig step downloads is not in the guest after the
    # setup: the gold state takes it from the dataset URL that step fetches.
    later = _postconfig_downloads(task)
    files = [
        GoldFile("cloud_file", later[posixpath.normpath(f.source)], f.target)
        if f.source_getter == "vm_file" and posixpath.normpath(f.source) in later
        else f
        for f in files
    ]
    targets: dict[str, GoldFile] = {}
    for f in files:
        if targets.setdefault(f.target, f) != f:
            return NoGold(f"two expected files for {f.target}")
    return GoldPlan(files=tuple(targets.values()))


def _postconfig_downloads(task: Task) -> dict[str, str]:
    """The guest paths the postconfig's ``download`` steps write, with their URLs."""
    found: dict[str, str] = {}
    for step in task.evaluator.postconfig:
        if step.type != "download" or not isinstance(step.parameters.get("files"), list):
            continue
        for entry in step.parameters["files"]:
            if isinstance(entry, dict):
                path, url = entry.get("path"), entry.get("url")
                if isinstance(path, str) and isinstance(url, str) and path and url:
                    found[posixpath.normpath(path)] = url
    return found


def _file_pairs(call: MetricCall) -> list[GoldFile] | str:
    """The call's expected files beside the result paths they belong at, or why not."""
    result, expected = call.result, call.expected
    if result.type not in RESULT_FILE_GETTERS:
        return f"the result is read by {result.type}, not a file getter"
    if expected is None or expected.type not in EXPECTED_FILE_GETTERS:
        kind = "no expected getter" if expected is None else f"the expected is {expected.type}"
        return f"{kind}, not a file"
    targets, sources = _paths(result), _paths(expected)
    if targets is None or sources is None or len(targets) != len(sources):
        return "the result and expected getters name their files differently"
    return [GoldFile(expected.type, s, t) for s, t in zip(sources, targets, strict=True)]


def _paths(getter: GetterSpec) -> list[str] | None:
    """A file getter's paths (one, or ``multi``'s list); None when malformed."""
    raw: Any = getter.config.get("path")
    listed = raw if getter.config.get("multi", False) else [raw]
    if not isinstance(listed, list) or not all(isinstance(p, str) and p for p in listed):
        return None
    return list(listed)


def gold_setup(
    config: dict[str, Any], plan: GoldPlan
) -> tuple[dict[str, Any], tuple[GoldFile, ...]]:
    """The task's JSON with each setup ``download`` of a gold target fetching its expected
    file (a ``cloud_file``) instead, and the gold files still to place after the setup."""
    gold = copy.deepcopy(config)
    by_target = {
        posixpath.normpath(f.target): f for f in plan.files if f.source_getter == "cloud_file"
    }
    fetched: set[str] = set()
    for step in gold.get("config", []):
        if not isinstance(step, dict) or step.get("type") != "download":
            continue
        for entry in step.get("parameters", {}).get("files", []):
            path = entry.get("path") if isinstance(entry, dict) else None
            match = by_target.get(posixpath.normpath(path)) if isinstance(path, str) else None
            if match is not None:
                entry["url"] = match.source
                fetched.add(match.target)
    return gold, tuple(f for f in plan.files if f.target not in fetched)
