"""The channels check's rows, from what its probes planted and collected (pure).

Every environment plants its own token in every channel class and then collects from
all of them (see `isolation.checks.channel_probe`). A token of environment S collected by
environment R (S != R) in class C is a ``cross`` row S -> R for C. A class is proven for
R only when R collected its *own* token there (the collector can see that class; for
the X server's reads, which no environment's own server may make of its home, when its
server listed the harness's control font folder); otherwise, or when the probe could
not test it, the rows into R for that class are ``lost``. A sender whose kernel refused
to make the object at all (``refused``: kernel keys under the sandbox's system call
filter) put nothing there: its rows are ``clean`` whatever the receiver could prove.
A receiver whose view does not have the class's list at all (``closed``: a masked
``/proc`` file) can be sent nothing there: rows into it are ``clean``. Reaching the
harness (its ports, its run folder, the descriptors of the programs it started) is a
row between the environment and ``harness``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.tokens import scan_text

NAME = "channels"
HARNESS = "harness"
# Each class is proven for a receiver by finding its own token there.
CLASSES = (
    "ipc",
    "files",
    "network",
    "processes",
    "privilege",
    "keys",
    "locks",
    "watches",
    "x_server",
    "proc_locks",
    "aio",
    "page_cache",
    "counters",
)
# Classes whose collector cannot find its own token by design, so a control proves it
# instead: a sandboxed X server sees no home, its own environment's included; the
# collector proves that its server reads a folder given by path on the harness's control
# font folder, and its collect is then judged (``tested`` is True only after that).
PROVEN_BY_CONTROL = ("x_server",)
# What a probe plants in place of True when the kernel refused to make the object.
REFUSED = "refused"
# What a collector reports for a class whose list its view does not have at all.
CLOSED = "closed"
REACH_CLASSES = ("control_plane", "harness_files", "harness_programs")
# Reach classes that go from the environment to the harness (the others bring the
# harness's data to the environment).
_TOWARDS_HARNESS = ("control_plane", "harness_programs")
LIMITS_CLASS = "limits"
_LIMIT_FIELDS = ("memory_bytes", "pids", "cpu_shares", "tmpfs_bytes", "home_bytes", "ptys")


@dataclass(frozen=True)
class Limits:
    """What an environment may take of the machine: memory, tasks, CPU weight, the size
    of the largest place it can write outside its home (each a private tmpfs), of its
    home, and its share of the kernel's pty pool (None: no limit)."""

    memory_bytes: int | None
    pids: int | None
    cpu_shares: int | None
    tmpfs_bytes: int | None
    home_bytes: int | None = None
    ptys: int | None = None

    @classmethod
    def from_probe(cls, seen: Mapping[str, Any]) -> Limits:
        def value(key: str) -> int | None:
            v = seen.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None

        return cls(*(value(k) for k in _LIMIT_FIELDS))

    def beyond(self, allowed: Limits) -> list[str]:
        """What of this exceeds ``allowed`` (or has no limit where one is allowed)."""
        out = []
        for key in _LIMIT_FIELDS:
            mine, bound = getattr(self, key), getattr(allowed, key)
            if bound is not None and (mine is None or mine > bound):
                out.append(f"{key} {'unlimited' if mine is None else mine} > {bound}")
        return out


def limit_rows(
    trial: int,
    window: int,
    envs: Sequence[str],
    plants: Mapping[str, PlantReport],
    allowed: Mapping[str, Limits],
) -> list[IsolationRow]:
    """The limit probe's rows: an environment that may take more than its limits can
    take it from every other one, so each row S -> R is ``cross`` when S's limits are
    not in force, ``clean`` when they are, ``lost`` when S's probe could not say."""
    rows = []
    for src in envs:
        plant = plants.get(src)
        seen = plant.planted.get("limits_seen") if plant and not plant.error else None
        if not isinstance(seen, Mapping):
            result, why = RowResult.LOST, f"{src}'s probe did not say what it may take"
        elif src not in allowed:
            result, why = RowResult.LOST, f"no limits are known for {src}"
        else:
            over = Limits.from_probe(seen).beyond(allowed[src])
            result = RowResult.CROSS if over else RowResult.CLEAN
            why = f"{src} may take " + "; ".join(over) if over else f"{src}'s limits hold"
        for dst in envs:
            if dst != src:
                detail = f"{LIMITS_CLASS}: {why}"[:500]
                rows.append(IsolationRow(NAME, trial, src, dst, result, window, detail))
    return rows


@dataclass(frozen=True)
class PlantReport:
    """What one environment's plant step said (None fields: the step never answered)."""

    env: str
    planted: Mapping[str, Any] = field(default_factory=dict)
    reached: Sequence[Mapping[str, Any]] = ()
    error: str | None = None


@dataclass(frozen=True)
class CollectReport:
    """What one environment's collect step found and which classes it could test."""

    env: str
    found: Sequence[Mapping[str, Any]] = ()
    tested: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None


def _sources(item: Mapping[str, Any], envs: Sequence[str]) -> set[str]:
    """The environments one found item came from."""
    out = {hit.token.env for hit in scan_text(str(item.get("text", "")))}
    index = item.get("key_index")
    if isinstance(index, int) and 0 <= index < len(envs):
        out.add(envs[index])
    return out


def channel_rows(
    trial: int,
    window: int,
    envs: Sequence[str],
    plants: Mapping[str, PlantReport],
    collects: Mapping[str, CollectReport],
) -> list[IsolationRow]:
    """Rows for every class, every ordered pair of ``envs``, and each env and the harness."""
    rows: list[IsolationRow] = []

    def row(cls: str, src: str, dst: str, result: RowResult, why: str) -> None:
        rows.append(IsolationRow(NAME, trial, src, dst, result, window, f"{cls}: {why}"[:500]))

    for receiver in envs:
        report = collects.get(receiver)
        crossed: dict[tuple[str, str], str] = {}
        own: set[str] = set()
        for item in report.found if report else ():
            cls = str(item.get("class"))
            for src in _sources(item, envs):
                if src == receiver:
                    own.add(cls)
                elif src in envs:
                    crossed.setdefault((cls, src), str(item.get("where", "?")))
        for cls in CLASSES:
            why_lost = _unproven(cls, receiver, report, plants.get(receiver), own)
            for sender in envs:
                if sender == receiver:
                    continue
                if (cls, sender) in crossed:
                    row(
                        cls, sender, receiver, RowResult.CROSS, f"found at {crossed[(cls, sender)]}"
                    )
                elif _refused(cls, plants.get(sender)):
                    row(cls, sender, receiver, RowResult.CLEAN, f"{sender}'s kernel refused it")
                elif _closed(cls, report):
                    row(cls, sender, receiver, RowResult.CLEAN, f"{receiver}'s view has no list")
                elif why_lost is None and _planted(cls, plants.get(sender)):
                    row(cls, sender, receiver, RowResult.CLEAN, "nothing found")
                else:
                    why = why_lost or f"{sender} could not plant its token"
                    row(cls, sender, receiver, RowResult.LOST, why)
    for env in envs:
        plant = plants.get(env)
        reached = (
            {str(r.get("class")): str(r.get("where", "?")) for r in plant.reached} if plant else {}
        )
        for cls in REACH_CLASSES:
            src, dst = (env, HARNESS) if cls in _TOWARDS_HARNESS else (HARNESS, env)
            if plant is None or plant.error:
                row(
                    cls,
                    src,
                    dst,
                    RowResult.LOST,
                    f"{env}'s probe did not run: {plant.error if plant else 'no answer'}",
                )
            elif cls in reached:
                row(cls, src, dst, RowResult.CROSS, f"reached {reached[cls]}")
            else:
                row(cls, src, dst, RowResult.CLEAN, "refused")
    return rows


def _refused(cls: str, plant: PlantReport | None) -> bool:
    if plant is None or plant.error:
        return False
    return plant.planted.get(cls) == REFUSED


def _closed(cls: str, report: CollectReport | None) -> bool:
    if report is None or report.error:
        return False
    return report.tested.get(cls) == CLOSED


def _planted(cls: str, plant: PlantReport | None) -> bool:
    if plant is None or plant.error:
        return False
    return plant.planted.get(cls) is True


def _unproven(
    cls: str,
    receiver: str,
    report: CollectReport | None,
    plant: PlantReport | None,
    own: set[str],
) -> str | None:
    """Why rows into ``receiver`` for ``cls`` cannot be judged (None: they can)."""
    if report is None or report.error:
        return f"{receiver}'s collect did not run: {report.error if report else 'no answer'}"
    tested = report.tested.get(cls)
    if tested is not True:
        return f"{receiver} could not test it: {tested or 'not tried'}"
    if cls not in own and cls not in PROVEN_BY_CONTROL:
        if plant is None or plant.planted.get(cls) is not True:
            return f"{receiver} could not plant its own token, so its collect is unproven"
        return f"{receiver} did not find its own token, so its collect is blind here"
    return None
