"""OSWorld task files: load and check a task JSON into typed, read-only models.

A task has ``config`` (setup steps run before the agent) and an ``evaluator``: one metric
(``func`` a string) or several (``func`` a list, with ``result``, ``expected`` and
``options`` lists of the same length combined by ``conj``), plus ``postconfig`` steps run
after the agent and before the getters. Anything that does not fit is a `TaskFileError`
naming the file and the problem, so a broken task never reaches a guest.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

INFEASIBLE = "infeasible"

Conj = Literal["and", "or"]


class TaskFileError(ValueError):
    """A task file cannot be read or does not have the shape of an OSWorld task."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


@dataclass(frozen=True)
class SetupStep:
    """One ``config``/``postconfig`` step: its type and its parameters."""

    type: str
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GetterSpec:
    """One getter: its type and the whole config object OSWorld passes to it."""

    type: str
    config: dict[str, Any]


@dataclass(frozen=True)
class MetricCall:
    """One metric with the getters that feed it and the options it is called with."""

    func: str
    result: GetterSpec
    expected: GetterSpec | None
    options: dict[str, Any]


@dataclass(frozen=True)
class Evaluator:
    """How a task is scored: metric calls, how they combine, and the postconfig steps."""

    func: str | tuple[str, ...]
    calls: tuple[MetricCall, ...]
    conj: Conj
    postconfig: tuple[SetupStep, ...]

    @property
    def infeasible(self) -> bool:
        """Whether the task is scored by whether the agent declared it impossible."""
        return self.func == INFEASIBLE

    @property
    def is_list(self) -> bool:
        """Whether ``func`` is a list (scores combine with ``conj``) or a single name."""
        return isinstance(self.func, tuple)


@dataclass(frozen=True)
class Task:
    """An OSWorld task as far as setting it up and checking it goes."""

    id: str
    path: str
    domain: str
    instruction: str
    config: tuple[SetupStep, ...]
    evaluator: Evaluator
    related_apps: tuple[str, ...] = ()

    def getters(self) -> list[GetterSpec]:
        """Every getter the evaluator uses, result and expected, in call order."""
        specs: list[GetterSpec] = []
        for call in self.evaluator.calls:
            specs.append(call.result)
            if call.expected is not None:
                specs.append(call.expected)
        return specs


def load_task(path: str | os.PathLike[str]) -> Task:
    """Read and check one task file; raise `TaskFileError` saying what is wrong."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(p, f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TaskFileError(p, f"not UTF-8 text: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(
            p, f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from exc
    return parse_task(data, p)


def parse_task(data: Any, path: str | os.PathLike[str] = "<task>") -> Task:
    """Check a decoded task JSON object and build the `Task`."""
    p = Path(path)
    if not isinstance(data, dict):
        raise TaskFileError(p, f"the task must be a JSON object, got {type(data).__name__}")
    task_id = data.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise TaskFileError(p, "missing 'id' (a non-empty string)")
    if "evaluator" not in data:
        raise TaskFileError(p, "missing 'evaluator'")
    instruction = data.get("instruction", "")
    if not isinstance(instruction, str):
        raise TaskFileError(p, "'instruction' must be a string")
    related_apps = data.get("related_apps", [])
    if not isinstance(related_apps, list) or not all(isinstance(a, str) for a in related_apps):
        raise TaskFileError(p, "'related_apps' must be a list of strings")
    return Task(
        id=task_id,
        path=str(p),
        domain=p.parent.name if p.parent.name else str(data.get("snapshot", "")),
        instruction=instruction,
        config=_parse_steps(data.get("config", []), "config", p),
        evaluator=_parse_evaluator(data["evaluator"], p),
        related_apps=tuple(related_apps),
    )


def _parse_steps(raw: Any, where: str, p: Path) -> tuple[SetupStep, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise TaskFileError(p, f"'{where}' must be a list of steps")
    steps: list[SetupStep] = []
    for i, step in enumerate(raw):
        if not isinstance(step, dict) or not isinstance(step.get("type"), str):
            raise TaskFileError(p, f"{where} step {i} must be an object with a string 'type'")
        params = step.get("parameters", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise TaskFileError(p, f"{where} step {i} ({step['type']}): 'parameters' not an object")
        steps.append(SetupStep(step["type"], params))
    return tuple(steps)


def _parse_getter(raw: Any, where: str, p: Path, *, optional: bool) -> GetterSpec | None:
    if optional and not raw:  # OSWorld skips an absent or empty expected getter
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise TaskFileError(p, f"evaluator {where} must be an object with a string 'type'")
    return GetterSpec(raw["type"], raw)


def _parse_options(raw: Any, where: str, p: Path) -> dict[str, Any]:
    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise TaskFileError(p, f"evaluator {where} must be an object")
    return raw


def _parse_evaluator(raw: Any, p: Path) -> Evaluator:
    if not isinstance(raw, dict):
        raise TaskFileError(p, "'evaluator' must be an object")
    if "func" not in raw:
        raise TaskFileError(p, "evaluator has no 'func'")
    func = raw["func"]
    conj = raw.get("conj", "and")
    if conj not in ("and", "or"):
        raise TaskFileError(p, f"evaluator 'conj' must be 'and' or 'or', got {conj!r}")
    postconfig = _parse_steps(raw.get("postconfig", []), "postconfig", p)
    if isinstance(func, str):
        if func == INFEASIBLE:
            return Evaluator(func, (), conj, postconfig)
        if "result" not in raw:
            raise TaskFileError(p, f"evaluator func {func!r} has no 'result' getter")
        result = _parse_getter(raw["result"], "result", p, optional=False)
        assert result is not None
        call = MetricCall(
            func,
            result,
            _parse_getter(raw.get("expected"), "expected", p, optional=True),
            _parse_options(raw.get("options"), "options", p),
        )
        return Evaluator(func, (call,), conj, postconfig)
    if not isinstance(func, list) or not func or not all(isinstance(f, str) for f in func):
        raise TaskFileError(p, "evaluator 'func' must be a name or a non-empty list of names")
    return Evaluator(tuple(func), _parse_calls(func, raw, p), conj, postconfig)


def _parse_calls(funcs: list[str], raw: dict[str, Any], p: Path) -> tuple[MetricCall, ...]:
    n = len(funcs)
    results = raw.get("result")
    if not isinstance(results, list) or len(results) != n:
        raise TaskFileError(p, f"evaluator has {n} funcs but 'result' is not a list of {n}")
    expected = raw.get("expected") or [None] * n
    if not isinstance(expected, list) or len(expected) != n:
        raise TaskFileError(p, f"evaluator has {n} funcs but 'expected' is not a list of {n}")
    options = raw.get("options") or [{}] * n
    if not isinstance(options, list) or len(options) != n:
        raise TaskFileError(p, f"evaluator has {n} funcs but 'options' is not a list of {n}")
    calls = []
    for i, func in enumerate(funcs):
        result = _parse_getter(results[i], f"result[{i}]", p, optional=False)
        assert result is not None
        calls.append(
            MetricCall(
                func,
                result,
                _parse_getter(expected[i], f"expected[{i}]", p, optional=True),
                _parse_options(options[i], f"options[{i}]", p),
            )
        )
    return tuple(calls)


def find_task_files(paths: list[str | os.PathLike[str]]) -> list[Path]:
    """Task files named directly, plus every ``*.json`` under named folders, sorted."""
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found.extend(sorted(p.rglob("*.json")))
        else:
            found.append(p)
    return found


OSWORLD_HOME = "/home/user"
"""The home of the user OSWorld's tasks run as, which their paths name."""

# OSWorld's home as a path or a file URI, not a longer name (``/home/username``) nor a
# path beneath another folder (``/srv/home/user``).
_OSWORLD_HOME = re.compile(r"(?:(?<=file://)|(?<![\w./-]))/home/user(?![\w.-])")


def rehome_text(text: str, home: str) -> str:
    """``text`` with every path (or file URI) under OSWorld's home moved under ``home``."""
    return _OSWORLD_HOME.sub(lambda _: home, text)


def _rehome(value: Any, home: str) -> Any:
    if isinstance(value, str):
        return rehome_text(value, home)
    if isinstance(value, list):
        return [_rehome(v, home) for v in value]
    if isinstance(value, dict):
        return {k: _rehome(v, home) for k, v in value.items()}
    return value


def task_in_home(task: Task, home: str) -> Task:
    """The task with the paths its setup, getters and metric options name under OSWorld's
    home (``/home/user``) moved under ``home``: the guest's own home, where its user's
    files are. The instruction is left as the task wrote it."""
    if home == OSWORLD_HOME:
        return task

    def steps(items: tuple[SetupStep, ...]) -> tuple[SetupStep, ...]:
        return tuple(SetupStep(s.type, _rehome(s.parameters, home)) for s in items)

    def getter(spec: GetterSpec | None) -> GetterSpec | None:
        return None if spec is None else GetterSpec(spec.type, _rehome(spec.config, home))

    calls = tuple(
        MetricCall(
            c.func,
            GetterSpec(c.result.type, _rehome(c.result.config, home)),
            getter(c.expected),
            _rehome(c.options, home),
        )
        for c in task.evaluator.calls
    )
    evaluator = replace(task.evaluator, calls=calls, postconfig=steps(task.evaluator.postconfig))
    return replace(task, config=steps(task.config), evaluator=evaluator)
