"""The code blocks of the README and the documentation, read from the pages as a user
reads them, so that a test runs what a page shows and an edit of the page changes what is
tested.

A test names a block by its page, the heading it sits under and its index among that
heading's blocks (``doc_block("docs/audit.md", "Running it")``), and runs its text:
``run_shell`` for an ``sh`` or ``bash`` block, ``run_python`` for a ``python`` one.
A placeholder a page writes as ``<name>`` (a job folder, a task) is filled in by the test
that runs the block, and only those. A block no test runs says why on its page, in a
paragraph right under it that begins ``Not run by the tests:``;
tests/unit/test_docs_examples.py fails for a block that does neither.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# The languages of blocks a user is told to run; text, toml, yaml and output are not.
RUNNABLE = frozenset({"sh", "bash", "python"})
NOT_RUN = "Not run by the tests:"
# The call by which a test takes a block from a page: what the coverage check looks for.
TAKE = "doc_block"

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
# This module and its own tests call the function by a name given at run time.
_OWN_FILES = frozenset({"docs_examples.py", "test_docs_examples.py"})
_PLACEHOLDER = re.compile(r"<([a-z][a-z_-]*)>")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str  # relative to the repository
    heading: str  # the text of the heading it sits under
    index: int  # among that heading's blocks, from 0
    lang: str
    text: str
    line: int  # of its opening fence, from 1
    not_run: str | None  # the reason the page gives, when no test runs it

    @property
    def runnable(self) -> bool:
        """A block a user is told to run: a command or a Python snippet."""
        return self.lang in RUNNABLE

    @property
    def where(self) -> str:
        """The block's place, for messages: page, line, heading and index."""
        return f"{self.page}:{self.line} ({self.heading!r}, block {self.index})"


class DocBlockNotFoundError(LookupError):
    """No block at the page, heading and index a test names: the page changed."""


def pages() -> list[Path]:
    """The README and every page of docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """Every fenced code block of ``page``, in order."""
    name = page.relative_to(REPO).as_posix()
    lines = page.read_text().split("\n")
    found: list[Block] = []
    heading = ""
    per_heading: dict[str, int] = {}
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            titled = _HEADING.match(lines[i])
            if titled:
                heading = titled.group(1)
            i += 1
            continue
        indent, fence, lang = opening.groups()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = [line.removeprefix(indent) for line in lines[i + 1 : end]]
        index = per_heading.get(heading, 0)
        per_heading[heading] = index + 1
        found.append(
            Block(
                name, heading, index, lang, "\n".join(body) + "\n", i + 1, _reason(lines, end + 1)
            )
        )
        i = end + 1
    return found


def _reason(lines: list[str], after: int) -> str | None:
    """The paragraph right under a block when it says why no test runs the block."""
    i = after
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not lines[i].strip().startswith(NOT_RUN):
        return None
    paragraph = []
    while i < len(lines) and lines[i].strip():
        paragraph.append(lines[i].strip())
        i += 1
    return " ".join(paragraph).removeprefix(NOT_RUN).strip()


def all_blocks() -> list[Block]:
    """Every block of every page."""
    return [b for page in pages() for b in blocks(page)]


def doc_block(page: str, heading: str, index: int = 0) -> Block:
    """The block a test runs: the ``index``-th under ``heading`` on ``page``."""
    for block in blocks(REPO / page):
        if (block.heading, block.index) == (heading, index):
            return block
    raise DocBlockNotFoundError(f"{page} has no block {index} under the heading {heading!r}")


def filled(block: Block, **placeholders: str) -> str:
    """The block's text with its ``<name>`` placeholders filled in; every placeholder of
    the block must be given, and only those."""
    named = set(_PLACEHOLDER.findall(block.text))
    if named != set(placeholders):
        raise ValueError(
            f"{block.where} has placeholders {sorted(named)}, given {sorted(placeholders)}"
        )
    text = block.text
    for name, value in placeholders.items():
        text = text.replace(f"<{name}>", value)
    return text


def run_shell(
    block: Block,
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
    **placeholders: str,
) -> subprocess.CompletedProcess[str]:
    """Run an ``sh`` or ``bash`` block as a script in ``cwd`` (stopping at its first
    failing command); its output is captured."""
    assert block.lang in {"sh", "bash"}, block.where
    argv = ["bash", "-e", "-c", filled(block, **placeholders)]
    # A session of its own: what the block left running when it failed (a server it
    # started in the background) is stopped with it.
    with subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(os.environ if env is None else env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def run_python(
    block: Block, namespace: dict[str, Any] | None = None, **placeholders: str
) -> dict[str, Any]:
    """Execute a ``python`` block in ``namespace`` (what earlier blocks of the page
    defined, when it continues them); the namespace after it."""
    assert block.lang == "python", block.where
    names = {} if namespace is None else namespace
    exec(compile(filled(block, **placeholders), block.where, "exec"), names)
    return names


def taken_by_tests(root: Path = REPO / "tests") -> Iterator[tuple[tuple[str, str, int], Path]]:
    """Each (page, heading, index) a test takes with ``doc_block``, and the test file."""
    for path in sorted(root.rglob("*.py")):
        if TAKE not in path.read_text():
            continue
        tree = ast.parse(path.read_text(), str(path))
        constants = _module_constants(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name != TAKE or path.name in _OWN_FILES:
                continue
            given = [*node.args, *(k.value for k in node.keywords if k.arg == "index")]
            values = [_literal(a, constants) for a in given]
            if None in values or len(values) not in (2, 3):
                # A locator computed at run time cannot be checked before the test runs.
                raise ValueError(
                    f"{path}:{node.lineno}: {TAKE} takes literals or module constants only"
                )
            page, heading, *index = values
            yield (str(page), str(heading), int(index[0]) if index else 0), path


def _module_constants(tree: ast.Module) -> dict[str, object]:
    """The module's ``NAME = "literal"`` assignments."""
    return {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
    }


def _literal(node: ast.expr, constants: dict[str, object]) -> object | None:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None
