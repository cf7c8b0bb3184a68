"""The documentation's reference pages, made from the code at every build.

mkdocs loads this file as a hook (``hooks:`` in mkdocs.yml). On every build it adds the
pages below to the site, made afresh from the code and data they describe, so none of
them can go stale and none is kept in git:

- ``reference/cli.md``: every ``cleanroom`` command, argument and option, read from the
  typer app (`cleanroom.cli.app`);
- ``reference/harbor-fields.md``: every field of the pinned Harbor release's task model
  (``tests/data/harbor/task-fields.json``) with what cleanroom does with it
  (`cleanroom.verifiers.container.task.harbor_field_status`);
- ``reference/isolation-checks.md``: the isolation checks (`cleanroom.isolation.checks.CHECKS`),
  their trial counts and the leaky setups and faults that prove them;
- ``reference/attacks.md``: the red team's forging attacks
  (`cleanroom.redteam.catalogue.ATTACKS`);
- ``reference/schema.md``: the tables of the run and audit databases, made by applying
  their migrations (`cleanroom.store.migrations`) to a database in memory.

It also holds the prose to the code, so that a renamed or moved thing fails the build:

- README.md's table of outcome reasons against `cleanroom.core.outcomes.Reason`: a reason
  missing from the table, or listed with the wrong cause, is an error;
- every path of the repository a page names in a code span (``core/outcomes.py``,
  ``examples/tasks/fix-median``) must exist, and every dotted name of cleanroom's
  (``core.breakage.judge``, ``cleanroom.store.rundb``) must import; a page that names
  one that does not is a warning, which ``mkdocs build --strict`` turns into a failure;
- README.md's links into the repository (``docs/...``) must point at files that exist.

Run alone, it prints one page: ``python scripts/docs_reference.py cli`` (or
``harbor-fields``, ``isolation-checks``, ``attacks``, ``schema``).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import logging
import re
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

ROOT = Path(__file__).resolve().parents[1]
FIELDS_FILE = ROOT / "tests" / "data" / "harbor" / "task-fields.json"
README = ROOT / "README.md"

_GENERATED = (
    "<!-- Made by scripts/docs_reference.py at every build of the docs; do not edit. -->\n\n"
)


def _text(s: str) -> str:
    """Plain text for Markdown: rich's escapes undone, Markdown's and HTML's characters
    escaped, so help text shows as written."""
    s = s.replace("\\[", "[")
    s = re.sub(r"([\\`*_\[\]|])", r"\\\1", s)
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _page(title: str, intro: str, *columns: str) -> list[str]:
    """A generated page's start: its title, the note that it is made, its introduction,
    and the head of its first table (when ``columns`` are given)."""
    return [f"# {title}\n\n", _GENERATED, intro + "\n\n", *([_head(*columns)] if columns else [])]


def _head(*columns: str) -> str:
    return _row(*columns) + "|---" * len(columns) + "|\n"


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |\n"


def _code(s: str) -> str:
    """``s`` as one code span, whatever backticks it holds."""
    fence = "``" if "`" in s else "`"
    return f"{fence}{s}{fence}" if fence == "`" else f"{fence} {s} {fence}"


# The CLI reference.


def _commands(cmd: Any, ctx: typer.Context, path: str) -> Iterator[tuple[str, Any, Any]]:
    """Every command under ``cmd`` (itself first) as ``(path, command, context)``."""
    yield path, cmd, ctx
    if isinstance(cmd, TyperGroup):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _commands(
                    sub, typer.Context(sub, info_name=name, parent=ctx), path + " " + name
                )


def _summary(cmd: Any) -> str:
    return _text((cmd.short_help or cmd.help or "").strip().split("\n\n")[0].replace("\n", " "))


def cli_page() -> str:
    from cleanroom.cli import app

    root = typer.main.get_command(app)
    commands = list(_commands(root, typer.Context(root, info_name="cleanroom"), "cleanroom"))
    out = _page(
        "Command reference",
        "Every command of `cleanroom`, read from its own `--help`. "
        "The [commands page](../commands.md) says what each is for.",
        "command",
        "what it does",
    )
    for path, cmd, _ in commands[1:]:
        if not isinstance(cmd, TyperGroup):
            anchor = path.replace(" ", "-")
            out.append(_row(f"[{_code(path)}](#{anchor})", _summary(cmd)))
    out.append("\n")
    for path, cmd, ctx in commands:
        if isinstance(cmd, TyperGroup) and path != "cleanroom":
            continue  # a group's own options are only --help
        anchor = path.replace(" ", "-")
        out.append(f"## {_code(path)} {{#{anchor}}}\n\n")
        if cmd.help:
            out.append(_text(cmd.help.strip()) + "\n\n")
        usage = " ".join(cmd.collect_usage_pieces(ctx))
        out.append(f"```text\n{path} {usage}\n```\n\n")
        args, opts = [], []
        for param in cmd.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None or record[0] == "--help":
                continue
            (args if param.param_type_name == "argument" else opts).append(record)
        for title, records in (("Arguments", args), ("Options", opts)):
            if records:
                out.append(f"**{title}**\n\n")
                out += [f"- {_code(name)}: {_text(help_)}\n" for name, help_ in records]
                out.append("\n")
    return "".join(out)


# Harbor's task fields.


def _harbor_type(t: str) -> str:
    t = re.sub(r"<class '([^']+)'>", r"\1", t)
    return re.sub(r"\b(?:[a-z_]+\.)+(?=[A-Za-z_]+\b)", "", t)


def harbor_fields_page() -> str:
    from cleanroom.verifiers.container.task import harbor_field_status

    where = _source_of(harbor_field_status)
    data = json.loads(FIELDS_FILE.read_text(encoding="utf-8"))
    out = _page(
        "Harbor's task fields",
        f"Every field of Harbor's task model ({_text(data['source'])}), nested configs "
        "included, as `tests/data/harbor/task-fields.json` lists it, and what cleanroom does "
        f"with it (`HARBOR_FIELDS` in `{where}`): **read** with Harbor's "
        "meaning, **kept** (carried, it changes nothing that runs), or **refused** by name. "
        "A field listed here that cleanroom neither reads nor refuses fails a unit test "
        "(`tests/unit/container/test_harbor_fields.py`). A list of tables is written "
        "`name[]`; a section's fields follow it. See [Harbor's task format](../harbor.md).",
        "field",
        "Harbor's type",
        "cleanroom",
    )
    for row in data["fields"]:
        field = row["field"]
        status = harbor_field_status(field) or "**neither read nor refused**"
        out.append(_row(_code(field), _code(_harbor_type(row["type"])), _text(status)))
    out.append("\nOlder names Harbor still reads and maps onto the fields above (legacy keys):\n\n")
    for key in data["legacy_keys"]:
        out.append(f"- {_code(key)}: {_text(harbor_field_status(key) or 'not listed')}\n")
    out.append(
        f"\nThe list is regenerated from an installed Harbor with "
        f"`{data['regenerate']}`; the tests never import Harbor.\n"
    )
    return "".join(out)


# The isolation checks.


def isolation_checks_page() -> str:
    from cleanroom.environments.leaky_setups import Leak
    from cleanroom.isolation import checks as checks_module
    from cleanroom.isolation.checks import CHECKS
    from cleanroom.isolation.controls.matrix import setups_of
    from cleanroom.isolation.fault import Fault

    out = _page(
        "Isolation checks",
        f"The table of checks (`CHECKS` in `{_source_of(checks_module)}`), by number. "
        "Numbers 1 (the positive control) and 6 (the canary) are not in the table: they run "
        "on their own. *Trials* are per window and per window of the soak; an on-demand "
        "check runs only when asked for (`--on-demand`, `--tests`). *Proven by* lists the "
        "leaky setups and faults under which the check must report `cross`: its leaky "
        "controls. See [Isolation](../isolation.md).",
        *("#", "check", "what it does", "trials", "soak trials", "on demand", "programs"),
        "proven by",
    )
    for check in sorted(CHECKS.values(), key=lambda c: c.number):
        doc = (type(check).__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        s = check.schedule
        out.append(
            _row(
                *(check.number, _code(check.name), _text(doc), s.window, s.soak),
                "yes" if s.on_demand else "no",
                ", ".join(check.needs) or "-",
                ", ".join(_code(x) for x in setups_of(check)),
            )
        )
    out.append("\n## Leaky setups\n\n")
    out.append(
        "Each removes one protection between `env01` (the donor) and `env02` (the taker) "
        f"(`Leak` in `{_source_of(Leak)}`).\n\n" + _head("setup", "what is shared")
    )
    out += [_row(_code(leak.value), _text(leak.description)) for leak in Leak]
    out.append("\n## Faults\n\n")
    out.append(
        "Each removes one protection of the pool itself, on an otherwise isolated pool "
        f"(`Fault` in `{_source_of(Fault)}`).\n\n" + _head("setup", "proves")
    )
    out += [
        _row(_code("fault:" + f.value), _code(c.name))
        for f in Fault
        for c in CHECKS.values()
        if f in c.faults
    ]
    return "".join(out)


# The red team's attacks.


def attacks_page() -> str:
    from cleanroom.redteam.catalogue import ATTACKS, Attack

    out = _page(
        "Forging attacks",
        f"The {len(ATTACKS)} attacks of the red team's catalogue "
        f"(`ATTACKS` in `{_source_of(Attack)}`; each script is `redteam/attacks/<id>.sh`). "
        "Each runs as the agent of its target task. *Shared must show* is what its "
        "demonstration in the `shared` mode must be for the attack to count as "
        "demonstrated: `fooled` (a score above the task's truth) or `disturbed` (a reward "
        "other than the truth). *Cleared* is what the `cleared` mode is expected to do: it "
        "`holds`, the attack is its `known limit`, or the route is `not claimed` (the "
        "toolchain or `/tests`, which cleared never protects). Under `sealed` every attack "
        "must score 0. See [Reward files and the red team](../verifiers/rewards.md).",
        *("attack", "route", "task", "shared must show", "cleared"),
    )
    for a in ATTACKS:
        shows = f"{a.demonstration.value}: {_text(a.demonstrated_when)}"
        out.append(_row(_code(a.id), _text(a.route), _code(a.target), shows, a.cleared.value))
    return "".join(out)


# The databases' schemas.


def _schema(migrations: tuple[str, ...]) -> list[str]:
    """Every table the migrations make, with its columns, as Markdown."""
    db = sqlite3.connect(":memory:")
    for sql in migrations:
        db.executescript(sql)
    out = []
    tables = db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid"
    ).fetchall()
    for (table,) in tables:
        out.append(f"### `{table}`\n\n" + _head("column", "type", "not null", "default"))
        for _, name, type_, notnull, default, pk in db.execute(f"PRAGMA table_info({table})"):
            kind = f"{type_} (primary key)" if pk else type_
            shown = _code(str(default)) if default is not None else ""
            out.append(_row(_code(name), kind, "yes" if notnull else "", shown))
        out.append("\n")
    db.close()
    return out


def schema_page() -> str:
    from cleanroom.store import migrations

    where = _source_of(migrations)
    out = [
        *_page(
            "Database schemas",
            f"The tables the migrations in `{where}` make, in order. A database records how "
            "many migrations it has applied in `PRAGMA user_version`, and opening it applies "
            "the rest. See [The run database](../run-database.md).",
        ),
        f"## The run database (`run.sqlite`, {len(migrations.MIGRATIONS)} migrations)\n\n",
        *_schema(migrations.MIGRATIONS),
        f"## An audit's database (`audit.sqlite`, {len(migrations.AUDIT_MIGRATIONS)} "
        "migrations)\n\n",
        *_schema(migrations.AUDIT_MIGRATIONS),
    ]
    return "".join(out)


PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page,
    "reference/harbor-fields.md": harbor_fields_page,
    "reference/isolation-checks.md": isolation_checks_page,
    "reference/attacks.md": attacks_page,
    "reference/schema.md": schema_page,
}


# README's reasons table against the code.


def reasons_problems(readme: str) -> list[str]:
    """What README.md's table of outcome reasons says that `Reason` does not."""
    from cleanroom.core.outcomes import Reason

    listed: dict[str, tuple[str, str]] = {}
    for line in readme.splitlines():
        m = re.match(r"\| `([a-z_]+)` \| (agent|infrastructure) \| ([^|]+) \|", line)
        if m:
            listed[m.group(1)] = (m.group(2), m.group(3).strip())
    problems = []
    for reason in Reason:
        if reason.value not in listed:
            problems.append(f"README.md's table of reasons lacks `{reason.value}`")
            continue
        cause, outcome = listed.pop(reason.value)
        want = "failure, 0" if reason.cause.value == "agent" else "invalid"
        if (cause, outcome) != (reason.cause.value, want):
            problems.append(
                f"README.md lists `{reason.value}` as {cause}, {outcome}; "
                f"the code says {reason.cause.value}, {want}"
            )
    problems += [f"README.md lists `{name}`, which is no Reason" for name in listed]
    return problems


# Names in the prose that must still exist.

SRC = ROOT / "src" / "cleanroom"
# First parts of a repository path that the pages name; a task's own folders (its
# `tests/`, `environment/`, `solution/`) are named the same way and are left alone.
_ROOT_DIRS = {"src", "examples", "bench", "soak", "scripts", "docs"}
_TESTS_DIRS = {"unit", "integration", "contract", "data", "conftest.py"}
_NOT_KEPT = ("bench/out",)  # made by the benchmarks, never in git
_SPAN = re.compile(r"(?<!`)`([^`\s]+)`(?!`)")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)+/?")
_DOTTED = re.compile(r"(?:cleanroom\.)?([a-z_]+)((?:\.\w+)+)")
# A file's name without a folder (`run.sqlite`, `conftest.py`): mostly files a run or a
# task makes, so not checked.
_FILE_NAME = re.compile(
    r"[\w.-]+\.(?:py|sqlite|json|jsonl|html|md|toml|txt|sh|ya?ml|so|c|lua|odt|deb)"
)


def _source_of(obj: Any) -> str:
    """Where ``obj`` (a module, class or function of cleanroom's) is, from src/cleanroom."""
    module = obj if inspect.ismodule(obj) else inspect.getmodule(obj)
    return Path(inspect.getsourcefile(module) or "").relative_to(SRC).as_posix()


def _path_exists(name: str) -> bool | None:
    """Whether a repository path named in a page exists (None: not a repository path)."""
    if name.startswith((".", "/")) or name.startswith(_NOT_KEPT):
        return None
    first, _, rest = name.partition("/")
    if first == "tests":
        return (ROOT / name).exists() if rest.split("/")[0] in _TESTS_DIRS else None
    if first in _ROOT_DIRS:
        return (ROOT / name).exists()
    if (SRC / first).exists() or (SRC / f"{first}.py").exists():
        return (SRC / name).exists()
    return None


def _dotted_exists(name: str) -> bool | None:
    """Whether a dotted name of cleanroom's imports (None: not one of cleanroom's)."""
    m = _DOTTED.fullmatch(name)
    if m is None or not ((SRC / m.group(1)).exists() or (SRC / f"{m.group(1)}.py").exists()):
        return None
    parts = ["cleanroom", m.group(1), *m.group(2).strip(".").split(".")]
    for i in range(len(parts), 1, -1):
        module = ".".join(parts[:i])
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:
            found = False
        if not found:
            continue
        obj: Any = importlib.import_module(module) if i < len(parts) else None
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def stale_names(markdown: str) -> list[str]:
    """The repository paths and cleanroom names a page's code spans name that do not exist."""
    stale = []
    for span in _SPAN.findall(_FENCE.sub("", markdown)):
        if _PATH.fullmatch(span):
            exists = _path_exists(span)
        elif _FILE_NAME.fullmatch(span):
            continue
        elif _DOTTED.fullmatch(span):
            exists = _dotted_exists(span)
        else:
            continue
        if exists is False:
            stale.append(span)
    return sorted(set(stale))


def readme_problems() -> list[str]:
    """README.md's reasons table against the code, and its links into the repository."""
    text = README.read_text(encoding="utf-8")
    problems = reasons_problems(text)
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" not in target and not (ROOT / target).exists():
            problems.append(f"README.md links to {target}, which does not exist")
    return problems


# mkdocs hooks.

log = logging.getLogger("mkdocs.hooks.docs_reference")
# `mkdocs build --quiet` (as `make docs` runs it) raises the mkdocs loggers to errors, so a
# stale name would be dropped before --strict counts it: this logger keeps its own level.
log.setLevel(logging.WARNING)


def on_pre_build(config: Any) -> None:
    from mkdocs.exceptions import PluginError

    problems = readme_problems()
    if problems:
        raise PluginError("; ".join(problems))


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    for name in stale_names(markdown):
        log.warning(f"{page.file.src_uri} names `{name}`, which the repository no longer has")
    return markdown


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for uri, make in PAGES.items():
        files.append(File.generated(config, uri, content=make()))
    return files


if __name__ == "__main__":
    names = {uri.removeprefix("reference/").removesuffix(".md"): m for uri, m in PAGES.items()}
    if len(sys.argv) != 2 or sys.argv[1] not in names:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(names)}}}")
    sys.stdout.write(names[sys.argv[1]]())
