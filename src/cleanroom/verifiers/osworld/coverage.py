"""Which OSWorld tasks cleanroom can run, and what each of the others still needs.

A task's checker pieces (getters, metrics, setup steps) and which are missing come from
`support.task_support`.
Beyond its pieces a task may need something this machine does not have, decided by
these rules (`NEED_RULES`, printed with every report):

- **mirror**: it fetches files (``download`` and ``update_browse_history`` steps,
  ``cloud_file`` getters); they come
  from OSWorld's dataset or a mirror of it (``--mirror``).
- **live web**: its instruction, a setup or postconfig step, a getter or a metric's
  options name an http(s) URL outside the dataset and not on loopback, or a setup
  command installs packages by name (``apt install``, ``apt-get install``, ``pip
  install``; a package given as a path in the guest is not fetched):
  a live site, its current state, or a package archive, which no mirror holds. The
  task's ``source`` (where the idea came from) is not read.
- **account**: a ``googledrive`` or ``login`` step, or a ``googledrive_file`` getter.
- **VS Code**: ``related_apps`` names ``vs_code`` (or ``vscode``), a step launches
  ``code``, or a ``vscode_config`` getter reads its settings; VS Code is not packaged
  for Debian, so the desktop image does not have it.
- **system service**: a step, a getter or a metric's options run a tool of the service
  manager (``timedatectl``, ``systemctl``, ``hostnamectl``, ...): it asks systemd, which
  an environment here does not run, so the tool answers nothing a checker can read.

A task *runs here* when no piece is missing and it needs none of these; it runs *with a
mirror* when the mirror is all it needs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cleanroom.verifiers.osworld.mirror import DATASET_URL, task_file_urls
from cleanroom.verifiers.osworld.support import TaskSupport, task_support
from cleanroom.verifiers.osworld.task import SetupStep, Task


class Need(StrEnum):
    """Something beyond cleanroom's checker pieces that a task needs to run."""

    MIRROR = "mirror"
    LIVE_WEB = "live web"
    ACCOUNT = "account"
    VS_CODE = "VS Code"
    SYSTEM_SERVICE = "system service"


# The service manager's own tools: each asks a running systemd over D-Bus.
SYSTEMD_TOOLS = (
    "timedatectl",
    "systemctl",
    "hostnamectl",
    "localectl",
    "loginctl",
    "journalctl",
    "resolvectl",
    "busctl",
)

NEED_RULES: dict[Need, str] = {
    Need.MIRROR: "fetches files (a download or update_browse_history step or a cloud_file getter)",
    Need.LIVE_WEB: "names an http(s) URL outside the dataset and not on loopback in its"
    " instruction, a step, a getter or a metric's options, or installs packages by name in a"
    " step (apt install, apt-get install, pip install; not a path); its source is not read",
    Need.ACCOUNT: "has a googledrive or login step or a googledrive_file getter",
    Need.VS_CODE: "names vs_code or vscode in related_apps, launches code in a step, or"
    " reads vscode_config (VS Code is not packaged for Debian)",
    Need.SYSTEM_SERVICE: "runs a tool of the service manager (" + ", ".join(SYSTEMD_TOOLS) + ")"
    " in a step, a getter or a metric's options (no environment here runs systemd)",
}
"""Each need's rule, as reports print it: what a task that has the need does."""

ACCOUNT_STEPS = frozenset({"googledrive", "login"})
ACCOUNT_GETTERS = frozenset({"googledrive_file"})
VS_CODE_APPS = frozenset({"vs_code", "vscode"})
VS_CODE_GETTERS = frozenset({"vscode_config"})
VS_CODE_PROGRAM = "code"

_SYSTEMD_TOOL = re.compile(r"(?<![\w./-])(?:/usr)?(?:/s?bin/)?(" + "|".join(SYSTEMD_TOOLS) + r")\b")
_URL = re.compile(r"https?://[^\s\"'<>]+", re.IGNORECASE)
_LOOPBACK = re.compile(r"https?://(localhost|127\.[0-9.]+|\[::1\])([:/]|$)", re.IGNORECASE)
# An install command and the words after it, up to the end of that command.
_PACKAGE_INSTALL = re.compile(
    r"\b(?:apt(?:-get)?|pip3?)(?:\s+-\S+)*\s+install\b((?:\s+(?!&&|\|\||;|\|)[^\s;|&]+)*)"
)


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (keys included: a URL can be one)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield str(key)
            yield from _strings(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from _strings(inner)


def _step_values(steps: tuple[SetupStep, ...]) -> list[Any]:
    return [step.parameters for step in steps]


def web_urls(task: Task) -> tuple[str, ...]:
    """The URLs a task names that are neither the dataset's nor on loopback."""
    places: list[Any] = [task.instruction]
    places += _step_values(task.config + task.evaluator.postconfig)
    places += [g.config for g in task.getters()]
    places += [c.options for c in task.evaluator.calls]
    found = (url for text in _strings(places) for url in _URL.findall(text))
    return tuple(
        dict.fromkeys(u for u in found if not u.startswith(DATASET_URL) and not _LOOPBACK.match(u))
    )


def _installs_packages(task: Task) -> bool:
    for step in task.config + task.evaluator.postconfig:
        texts = list(_strings(step.parameters))
        command = step.parameters.get("command")
        if isinstance(command, list):  # an argv: its words as a shell would see them
            texts.append(" ".join(str(word) for word in command))
        if any(_fetches_packages(text) for text in texts):
            return True
    return False


def _fetches_packages(command: str) -> bool:
    """Whether a command installs a package by name (from an archive), not from a path
    a download step put in the guest (``pip install /home/user/x.whl``)."""
    for match in _PACKAGE_INSTALL.finditer(command):
        packages = [w for w in match.group(1).split() if not w.startswith("-")]
        if not packages or any("/" not in w for w in packages):
            return True
    return False


def systemd_tools(task: Task) -> tuple[str, ...]:
    """The service manager's tools a task's steps, getters or metric options run."""
    places: list[Any] = _step_values(task.config + task.evaluator.postconfig)
    places += [g.config for g in task.getters()]
    places += [c.options for c in task.evaluator.calls]
    found = (m.group(1) for text in _strings(places) for m in _SYSTEMD_TOOL.finditer(text))
    return tuple(dict.fromkeys(found))


def _launches_vs_code(task: Task) -> bool:
    for step in task.config + task.evaluator.postconfig:
        command = step.parameters.get("command")
        if isinstance(command, str):
            command = command.split()
        if isinstance(command, list) and command and command[0] == VS_CODE_PROGRAM:
            return True
    return False


def task_needs(task: Task) -> frozenset[Need]:
    """What ``task`` needs beyond the checker pieces, by the rules of `NEED_RULES`."""
    step_types = {s.type for s in task.config + task.evaluator.postconfig}
    getter_types = {g.type for g in task.getters()}
    needs: set[Need] = set()
    if task_file_urls(task):
        needs.add(Need.MIRROR)
    if web_urls(task) or _installs_packages(task):
        needs.add(Need.LIVE_WEB)
    if step_types & ACCOUNT_STEPS or getter_types & ACCOUNT_GETTERS:
        needs.add(Need.ACCOUNT)
    if (
        VS_CODE_APPS & set(task.related_apps)
        or getter_types & VS_CODE_GETTERS
        or _launches_vs_code(task)
    ):
        needs.add(Need.VS_CODE)
    if systemd_tools(task):
        needs.add(Need.SYSTEM_SERVICE)
    return frozenset(needs)


def lacking(support: TaskSupport) -> tuple[str, ...]:
    """A support report's missing pieces, as ``getter X``, ``metric Y``, ``step Z``."""
    return (
        tuple(f"getter {g}" for g in support.missing_getters)
        + tuple(f"metric {m}" for m in support.missing_metrics)
        + tuple(f"step {t}" for t in support.missing_steps)
    )


@dataclass(frozen=True)
class TaskCoverage:
    """One task: its support report, what it needs, and which pieces it lacks."""

    support: TaskSupport
    needs: frozenset[Need]

    @property
    def lacks(self) -> tuple[str, ...]:
        """The pieces still missing, as ``getter X``, ``metric Y``, ``step Z``."""
        return lacking(self.support)

    @property
    def complete(self) -> bool:
        """Whether every getter, metric and setup step of the task is implemented."""
        return not self.lacks

    @property
    def runs_here(self) -> bool:
        """Complete, and needs nothing this machine lacks."""
        return self.complete and not self.needs

    @property
    def runs_with_mirror(self) -> bool:
        """Complete, and a mirror of the dataset is all it needs."""
        return self.complete and self.needs == {Need.MIRROR}

    def ordered_needs(self) -> list[Need]:
        """The needs in `Need`'s order."""
        return [n for n in Need if n in self.needs]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record of the task's row."""
        return {
            "task": self.support.task_id,
            "domain": self.support.domain,
            "complete": self.complete,
            "runs_here": self.runs_here,
            "runs_with_mirror": self.runs_with_mirror,
            "needs": [n.value for n in self.ordered_needs()],
            "lacks": list(self.lacks),
        }


def task_coverage(task: Task) -> TaskCoverage:
    """The coverage row of one task."""
    return TaskCoverage(task_support(task), task_needs(task))


@dataclass(frozen=True)
class DomainCoverage:
    """The counts of one domain (or of all, as ``total``)."""

    domain: str
    tasks: int
    complete: int
    runs_here: int
    runs_with_mirror: int
    needs: dict[Need, int]
    lacking: int

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record."""
        return {
            "domain": self.domain,
            "tasks": self.tasks,
            "complete": self.complete,
            "runs_here": self.runs_here,
            "runs_with_mirror": self.runs_with_mirror,
            "needs": {n.value: self.needs[n] for n in Need},
            "lacking": self.lacking,
        }


def _count(domain: str, rows: list[TaskCoverage]) -> DomainCoverage:
    return DomainCoverage(
        domain=domain,
        tasks=len(rows),
        complete=sum(r.complete for r in rows),
        runs_here=sum(r.runs_here for r in rows),
        runs_with_mirror=sum(r.runs_with_mirror for r in rows),
        needs={n: sum(n in r.needs for r in rows) for n in Need},
        lacking=sum(not r.complete for r in rows),
    )


def by_domain(rows: list[TaskCoverage]) -> list[DomainCoverage]:
    """Counts per domain, in the order the domains first appear, then the total."""
    domains = list(dict.fromkeys(r.support.domain for r in rows))
    counts = [_count(d, [r for r in rows if r.support.domain == d]) for d in domains]
    return [*counts, _count("total", rows)]


@dataclass(frozen=True)
class MissingPiece:
    """A getter, metric or step cleanroom lacks: how many tasks lack it, and for how many
    it is the only piece missing (the tasks implementing it would complete)."""

    piece: str
    tasks: int
    alone: int

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record."""
        return {"piece": self.piece, "tasks": self.tasks, "alone": self.alone}


def missing_pieces(rows: list[TaskCoverage]) -> list[MissingPiece]:
    """Each missing piece, the most lacked first."""
    counts = Counter(piece for r in rows for piece in r.lacks)
    alone = Counter(r.lacks[0] for r in rows if len(r.lacks) == 1)
    pieces = [MissingPiece(p, n, alone[p]) for p, n in counts.items()]
    return sorted(pieces, key=lambda m: (-m.tasks, -m.alone, m.piece))


def coverage_json(rows: list[TaskCoverage], errors: list[str]) -> dict[str, Any]:
    """The whole report as JSON: rules, counts per domain, missing pieces, tasks."""
    return {
        "rules": {n.value: NEED_RULES[n] for n in Need},
        "domains": [d.to_json() for d in by_domain(rows)],
        "missing_pieces": [m.to_json() for m in missing_pieces(rows)],
        "tasks": [r.to_json() for r in rows],
        "errors": errors,
    }


def _cell(values: list[str]) -> str:
    return ", ".join(values).replace("|", "\\|") or "-"


def coverage_markdown(rows: list[TaskCoverage], source: str) -> str:
    """The report as a Markdown page; ``source`` names the task list it was made from."""
    out = [
        "# OSWorld coverage",
        "",
        "<!-- Generated: do not edit. Regenerate from the repository's root with",
        f"     cleanroom osworld coverage {source} --markdown > docs/osworld-coverage.md -->",
        "",
        f"Made by `cleanroom osworld coverage {source}`",
        "from OSWorld's task set: for each task, whether cleanroom implements every getter,",
        "metric and setup step it uses, and what else it needs to run. Whether the apps a",
        "task drives are in the desktop image is not part of it.",
        "",
        "A task **runs here** when every piece is implemented and it needs nothing below;",
        "it runs **with a mirror** when a mirror of OSWorld's file dataset is all it needs",
        "(`cleanroom osworld mirror` fills one, or makes one with `--made`). Every task that",
        "runs, here or with a mirror, is set up and checked by execution in",
        "[the execution audit](osworld-audit.md). A task needs:",
        "",
    ]
    out += [f"- **{n.value}** when it {NEED_RULES[n]}." for n in Need]
    out += ["", "## By domain", ""]
    heads = ["domain", "tasks", "every piece", "runs here", "with a mirror"]
    heads += [n.value for n in Need] + ["lacks a piece"]
    out += ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for d in by_domain(rows):
        name = f"**{d.domain}**" if d.domain == "total" else d.domain
        needs = " | ".join(str(d.needs[n]) for n in Need)
        out.append(
            f"| {name} | {d.tasks} | {d.complete} | {d.runs_here} | {d.runs_with_mirror}"
            f" | {needs} | {d.lacking} |"
        )
    out += [
        "",
        "## Missing pieces",
        "",
        "Each piece cleanroom lacks: the tasks that lack it, and those it alone keeps from",
        "having every piece.",
        "",
        "| piece | tasks lacking it | the only piece missing |",
        "|---|---|---|",
    ]
    out += [f"| `{m.piece}` | {m.tasks} | {m.alone} |" for m in missing_pieces(rows)]
    for domain in dict.fromkeys(r.support.domain for r in rows):
        out += ["", f"## {domain}", "", "| task | runs | needs | lacks |", "|---|---|---|---|"]
        for r in (r for r in rows if r.support.domain == domain):
            runs = "here" if r.runs_here else "with a mirror" if r.runs_with_mirror else "no"
            needs = _cell([n.value for n in r.ordered_needs()])
            out.append(f"| `{r.support.task_id}` | {runs} | {needs} | {_cell(list(r.lacks))} |")
    return "\n".join(out) + "\n"
