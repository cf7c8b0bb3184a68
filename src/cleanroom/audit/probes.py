"""The agent scripts an audit runs besides the no-op and the oracle (pure).

- Forging probes: attacks of the red-team catalogue that need nothing of a particular
  task, only the reward folder Harbor gives every task. `DEFAULT_PROBES` are the two that
  fool a naive verifier whatever the test script does: a planted reward (for a script
  that writes its reward only on success) and a process that rewrites the reward while
  the tests run (for one that always writes it).
- The answers probe: run as the agent, it looks for the task's own tests and solution
  files (the expected outputs among them) anywhere it can read in its container. Files
  are matched by size and SHA-256, so a copy under any name is found, and nothing of the
  answers themselves is handed to the agent's container, only their digests.
- Probes that start from the oracle's work (`oracle_probe_script`): the task's solution
  runs, and the files it wrote where the verifier looks (the work dir, the declared
  state, the artifacts, new top-level folders) are then replaced:
  - `OracleProbe.LINK`: each output equal to a file of the tests (up to white space)
    becomes a link to that file in ``/tests``. A verifier that follows it compares the
    tests' own file with itself: the answer is forged by one ``ln -s``. Its control,
    `OracleProbe.REMOVE`, removes those outputs instead: only when the tests pass with
    the links and fail without them did the links do the forging.
  - `OracleProbe.SCRATCH`: the same with the files test.sh itself wrote when it verified
    the oracle's work (a reference answer computed into ``/tmp``, say: `scratch_digests`).
    A verifier that follows the link compares its own scratch answer with itself. Its
    control is `OracleProbe.SCRATCH_REMOVE`.
  - `OracleProbe.CONFIGURE`: every git repository under the roots gets configuration
    its tools obey (a filter on every file, an fsmonitor hook, the usual hooks), and a
    home folder among the roots start-up files; each runs a program that prints
    `RAN_MARK`. Tests whose output shows the mark ran configuration the agent left.
  - `OracleProbe.NAMES`: for a task whose verifier grades the agent's running
    processes (``live_processes``), every name in the agent's ``/etc/hosts`` (``localhost``
    among them), its host name and the task's service names are sent to an address where
    nothing answers, in the file itself (Docker binds it into the container). The
    oracle's processes still run: tests that now fail resolved names through the
    agent's name files, a route to redirect their reference services to a fake.
  - `OracleProbe.SUCCEED`: every output becomes a program that succeeds at once and
    prints nothing (``import os; os._exit(0)`` for a Python module, ``exit 0`` for any
    other file). Tests that still pass trust the exit of the agent's code, not what it
    does.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from cleanroom.redteam.catalogue import Attack, by_id

DEFAULT_PROBES: tuple[str, ...] = ("planted-reward-txt", "background-writer")

# Files shorter than this match too much by chance (an empty __init__.py, "1\n").
MIN_ANSWER_BYTES = 32
# Where the answers probe finds its list of digests (the verifier's `AGENT_FILES_DIR`).
ANSWERS_LIST = "answers"
FOUND_MARK = "answer-visible"
_MAX_LISTED = 2000


def forging_probes(ids: Iterable[str]) -> list[Attack]:
    """The catalogue's attacks named ``ids``; `KeyError` naming the known ones otherwise."""
    return [by_id(i) for i in ids]


@dataclass(frozen=True)
class AnswerFile:
    """One file of the task's tests or solution, by its place in the task and digest."""

    name: str  # e.g. "tests/expected.txt"
    size: int
    sha256: str


def answer_files(task_dir: Path) -> list[AnswerFile]:
    """The task's tests and solution files (its steps' too, in a multi-step task) long
    enough to be told apart by content."""
    found: list[AnswerFile] = []
    places = [task_dir, *sorted(p for p in (task_dir / "steps").glob("*") if p.is_dir())]
    for root in (place / folder for place in places for folder in ("tests", "solution")):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            if len(data) < MIN_ANSWER_BYTES:
                continue
            name = path.relative_to(task_dir).as_posix()
            found.append(AnswerFile(name, len(data), hashlib.sha256(data).hexdigest()))
    return found[:_MAX_LISTED]


def answers_list(files: list[AnswerFile]) -> bytes:
    """The list handed to the probe: one ``size sha256`` line per file."""
    return "".join(f"{f.size} {f.sha256}\n" for f in files).encode()


# Run as the task's agent user. Only files of a listed size are hashed, so the walk costs
# a stat per file; /proc, /sys and /dev hold no task files, and the probe's own list is
# skipped. Each hit prints one line: the mark, the digest and the path.
ANSWERS_SCRIPT = rf"""#!/bin/bash
list=/tmp/cleanroom-attack/{ANSWERS_LIST}
sizes=(-false)
while read -r size sum; do sizes+=(-o -size "${{size}}c"); done < "$list"
find / \( -path /proc -o -path /sys -o -path /dev -o -path /tmp/cleanroom-attack \) -prune \
    -o -type f \( "${{sizes[@]}}" \) -readable -print0 2>/dev/null \
  | xargs -0 -r sha256sum 2>/dev/null \
  | while read -r sum path; do
      if grep -q " $sum\$" "$list"; then echo "{FOUND_MARK} $sum $path"; fi
    done | head -n 20
exit 0
"""


def visible_answers(output: str, files: list[AnswerFile]) -> list[dict[str, str]]:
    """What the probe found: each readable copy's path and the task file it matches."""
    names = {f.sha256: f.name for f in files}
    seen: list[dict[str, str]] = []
    for line in output.splitlines():
        mark, _, rest = line.partition(" ")
        digest, _, path = rest.partition(" ")
        if mark == FOUND_MARK and digest in names and path:
            seen.append({"path": path, "matches": names[digest]})
    return seen


class OracleProbe(StrEnum):
    """What a probe that starts from the oracle's work does to the files it wrote."""

    LINK = "link-to-tests"
    REMOVE = "remove-linked"  # the link probe's control
    SCRATCH = "link-to-scratch"
    SCRATCH_REMOVE = "remove-scratch-linked"  # the scratch probe's control
    SUCCEED = "succeed-at-once"
    CONFIGURE = "configured-tools"
    NAMES = "names-nowhere"

    @property
    def digests(self) -> str:
        """The name of the list of digests the probe links to (or removes by)."""
        return (
            SCRATCH_LIST
            if self in (OracleProbe.SCRATCH, OracleProbe.SCRATCH_REMOVE)
            else TESTS_LIST
        )


# What the probes print: one line per file replaced, and a line when nothing applied.
PROBE_MARK = "cleanroom-probe"
NOT_APPLICABLE = f"{PROBE_MARK}: not applicable"
# Where the link probe finds the tests' digests (`digests_of_tests`).
TESTS_LIST = "tests-digests"
# Where the scratch probe finds the digests of what test.sh wrote (`scratch_digests`).
SCRATCH_LIST = "scratch-digests"
_WHITE_SPACE = b" \t\r\n"


def digests_of_tests(tests_dirs: Iterable[Path]) -> bytes:
    """One ``sha256 /tests/NAME`` line per regular file of the tests (later folders over
    earlier ones, as ``/tests`` is made), of its content without white space."""
    found: dict[str, str] = {}
    for root in tests_dirs:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not path.is_file() or path.name == "test.sh":
                continue
            data = path.read_bytes().translate(None, _WHITE_SPACE)
            if data:
                found[path.relative_to(root).as_posix()] = hashlib.sha256(data).hexdigest()
    return "".join(f"{digest} /tests/{name}\n" for name, digest in found.items()).encode()


def scratch_digests(written: Iterable[object]) -> bytes:
    """One ``sha256 PATH`` line per file test.sh wrote, from a sealed run's
    ``verifier_wrote`` details (entries that are not ``{"path", "sha256"}`` are left out)."""
    lines = []
    for entry in written:
        if isinstance(entry, dict):
            path, digest = entry.get("path"), entry.get("sha256")
            if isinstance(path, str) and isinstance(digest, str) and "\n" not in path:
                lines.append(f"{digest} {path}\n")
    return "".join(lines).encode()


# How each probe replaces one file ``$f`` the oracle wrote (a step of the loop below).
_REPLACE_STEPS = {
    OracleProbe.LINK: rf"""
    sum=$(tr -d ' \t\r\n' < "$f" | sha256sum | cut -d' ' -f1)
    target=$(grep -m1 "^$sum " "$list" | cut -d' ' -f2-)
    [ -n "$target" ] || continue
    rm -f -- "$f" && ln -s -- "$target" "$f" && echo "{PROBE_MARK}: $f -> $target"
""",
    OracleProbe.REMOVE: rf"""
    sum=$(tr -d ' \t\r\n' < "$f" | sha256sum | cut -d' ' -f1)
    grep -q "^$sum " "$list" || continue
    rm -f -- "$f" && echo "{PROBE_MARK}: removed $f"
""",
    OracleProbe.SUCCEED: rf"""
    case "$f" in
      *.py) printf 'import os\nos._exit(0)\n' > "$f" ;;
      *) printf '#!/bin/sh\nexit 0\n' > "$f" && chmod +x -- "$f" ;;
    esac && echo "{PROBE_MARK}: $f"
""",
}
_REPLACE_STEPS[OracleProbe.SCRATCH] = _REPLACE_STEPS[OracleProbe.LINK]
_REPLACE_STEPS[OracleProbe.SCRATCH_REMOVE] = _REPLACE_STEPS[OracleProbe.REMOVE]


def oracle_probe_script(probe: OracleProbe, roots: Iterable[str]) -> str:
    """The agent script of ``probe``: the task's solution (at ``/solution``) runs in the
    work dir, then every regular file it created, wrote or changed the mode of under
    ``roots`` (and in top-level folders that did not exist before) is replaced as
    ``probe`` says. Files are found by their status change, so a program the oracle only
    made executable counts, and names are read NUL-separated, so any name does."""
    if probe is OracleProbe.CONFIGURE:
        return configure_probe_script(roots)
    if probe is OracleProbe.NAMES:
        raise ValueError("the names probe is made by names_probe_script, from the services")
    quoted = " ".join(shlex.quote(r) for r in roots)
    replace = _REPLACE_STEPS[probe]
    return rf"""#!/bin/bash
# The audit's {probe.value} probe (cleanroom.audit.probes).
list=/tmp/cleanroom-attack/{probe.digests}
roots=({quoted})
mark=/tmp/cleanroom-probe-mark
fresh=()
ls -A / > /tmp/cleanroom-probe-top
: > "$mark" && sleep 0.01
bash /solution/solve.sh > /tmp/cleanroom-probe-oracle.log 2>&1
echo "{PROBE_MARK}: the oracle exited $?"
while IFS= read -r top; do
  grep -qxF -- "$top" /tmp/cleanroom-probe-top || fresh+=("/$top")
done < <(ls -A /)
# What the oracle wrote, made or changed the mode of (its status changed since the mark),
# whatever its name.
listing() {{
  for r in "${{roots[@]}}" "${{fresh[@]}}"; do
    [ -e "$r" ] && find "$r" -xdev -type f -cnewer "$mark" -print0 2>/dev/null
  done
}}
replaced=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] && [ ! -L "$f" ] || continue{replace.rstrip()}
  replaced=$((replaced + 1))
done < <(listing)
[ "$replaced" -gt 0 ] || echo "{NOT_APPLICABLE}: no file the oracle wrote to replace"
exit 0
"""


# What the configured-tools probe's program prints (to standard error) when a tool of the
# verifier's runs it.
RAN_MARK = "cleanroom-probe-ran"
_GIT_HOOKS = (
    "pre-commit",
    "post-commit",
    "post-checkout",
    "post-merge",
    "pre-push",
    "post-rewrite",
    "reference-transaction",
    "post-index-change",
)
_START_UP_FILES = (".bashrc", ".profile", ".bash_profile", ".bash_login", ".zshenv", ".zshrc")


def configure_probe_script(roots: Iterable[str]) -> str:
    """The agent script of `OracleProbe.CONFIGURE`: the task's solution runs, then each
    git repository under ``roots`` is configured to run the probe's program from every
    tool git obeys, and each home folder among ``roots`` runs it from its start-up files.

    The program writes its mark to the standard output and error of every process above
    it, so the mark reaches test.sh's output even when the test captures what the tool
    printed (``$(git status 2>&1)``); as a filter it then passes its input through."""
    quoted = " ".join(shlex.quote(r) for r in roots)
    hooks = " ".join(_GIT_HOOKS)
    start_up = " ".join(_START_UP_FILES)
    return rf"""#!/bin/bash
# The audit's {OracleProbe.CONFIGURE.value} probe (cleanroom.audit.probes).
roots=({quoted})
bash /solution/solve.sh > /tmp/cleanroom-probe-oracle.log 2>&1
echo "{PROBE_MARK}: the oracle exited $?"
# The program a tool runs: its mark on every ancestor's output, then a filter's work.
write_hook() {{
  cat > "$1" <<'HOOK'
#!/bin/sh
p=$PPID
while [ -n "$p" ] && [ "$p" -gt 1 ]; do
  for fd in 1 2; do
    {{ echo "{RAN_MARK}: $0 $*" >> "/proc/$p/fd/$fd"; }} 2>/dev/null
  done
  p=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f2)
done
[ "$1" = filter ] && exec cat
exit 0
HOOK
  chmod +x "$1"
}}
configured=0
if command -v git > /dev/null; then
  while IFS= read -r -d '' gitdir; do
    hook="$gitdir/cleanroom-probe-hook"
    write_hook "$hook" || continue
    git config --file "$gitdir/config" filter.cleanroomprobe.clean "$hook filter" &&
    git config --file "$gitdir/config" filter.cleanroomprobe.smudge "$hook filter" &&
    git config --file "$gitdir/config" core.fsmonitor "$hook" || continue
    mkdir -p "$gitdir/info" "$gitdir/hooks"
    echo '* filter=cleanroomprobe' >> "$gitdir/info/attributes"
    for h in {hooks}; do
      printf '#!/bin/sh
exec "%s" hook
' "$hook" > "$gitdir/hooks/$h"
      chmod +x "$gitdir/hooks/$h"
    done
    echo "{PROBE_MARK}: configured $gitdir"
    configured=$((configured + 1))
  done < <(for r in "${{roots[@]}}"; do
             [ -d "$r" ] && find "$r" -xdev -name .git -type d -prune -print0 2>/dev/null
           done)
fi
for r in "${{roots[@]}}"; do
  case "$r" in /root|/home/*) ;; *) continue ;; esac
  [ -d "$r" ] || continue
  write_hook "$r/.cleanroom-probe-hook" || continue
  for f in {start_up}; do echo '"$HOME/.cleanroom-probe-hook" start-up' >> "$r/$f"; done
  echo "{PROBE_MARK}: configured $r"
  configured=$((configured + 1))
done
[ "$configured" -gt 0 ] || echo "{NOT_APPLICABLE}: no git repository or home folder in the state"
exit 0
"""


# Where the names probe sends every name: a loopback address nothing listens on.
NOWHERE_ADDRESS = "127.0.0.77"


def names_probe_script(names: Iterable[str]) -> str:
    """The agent script of `OracleProbe.NAMES`: the task's solution runs, then every
    name in ``/etc/hosts``, the host name and ``names`` (the task's services) are sent to
    `NOWHERE_ADDRESS`, and the resolver's name servers there too. Each file is written in
    place: it may be a bind mount."""
    extra = " ".join(shlex.quote(n) for n in names)
    return rf"""#!/bin/bash
# The audit's {OracleProbe.NAMES.value} probe (cleanroom.audit.probes).
bash /solution/solve.sh > /tmp/cleanroom-probe-oracle.log 2>&1
echo "{PROBE_MARK}: the oracle exited $?"
names=$( {{
  grep -v '^[[:space:]]*#' /etc/hosts 2>/dev/null | awk '{{for (i = 2; i <= NF; i++) print $i}}'
  hostname 2>/dev/null
  for n in localhost {extra}; do echo "$n"; done
}} | sort -u | tr '\n' ' ')
if printf '%s\t%s\n' {NOWHERE_ADDRESS} "$names" > /tmp/cleanroom-probe-hosts &&
   cat /tmp/cleanroom-probe-hosts > /etc/hosts 2>/dev/null; then
  echo "{PROBE_MARK}: /etc/hosts sends $names to {NOWHERE_ADDRESS}"
  echo "nameserver {NOWHERE_ADDRESS}" > /etc/resolv.conf 2>/dev/null || true
else
  echo "{NOT_APPLICABLE}: /etc/hosts cannot be written"
fi
exit 0
"""


def ran_configuration(outcome: Mapping[str, Any]) -> bool:
    """Whether a run's tests ran the configured-tools probe's program (its mark is in
    test.sh's output)."""
    details = outcome.get("details", {})
    tail = details.get("test_output_tail", "") if isinstance(details, Mapping) else ""
    return RAN_MARK in str(tail)


def probe_replaced(output: str) -> bool:
    """Whether an oracle probe replaced anything (its output says so)."""
    return NOT_APPLICABLE not in output
