"""A documented example is a test: every command and Python snippet the README and the
docs show is run by a test that takes it from its page, or its page says, right under it,
why no test runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..docs_examples import (
    REPO,
    Block,
    DocBlockNotFoundError,
    all_blocks,
    blocks,
    doc_block,
    filled,
    run_python,
    taken_by_tests,
)

PAGE = """# A page

```sh
make demo
```

## Running it

Some prose.

```python
x = 1 + 1
```

```sh
cleanroom audit <task>
```

Not run by the tests: it needs a
model endpoint.

```text
output, not a command
```
"""


@pytest.fixture
def page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from .. import docs_examples

    monkeypatch.setattr(docs_examples, "REPO", tmp_path)
    written = tmp_path / "page.md"
    written.write_text(PAGE)
    return written


def test_a_block_is_named_by_the_heading_it_sits_under_and_its_index_there(page: Path) -> None:
    found = [(b.heading, b.index, b.lang) for b in blocks(page)]
    assert found == [
        ("A page", 0, "sh"),
        ("Running it", 0, "python"),
        ("Running it", 1, "sh"),
        ("Running it", 2, "text"),
    ]
    assert blocks(page)[1].text == "x = 1 + 1\n"


def test_the_paragraph_under_a_block_that_says_it_is_not_run_gives_the_reason(page: Path) -> None:
    reasons = [b.not_run for b in blocks(page)]
    assert reasons == [None, None, "it needs a model endpoint.", None]


def test_only_shell_and_python_blocks_are_meant_to_be_run(page: Path) -> None:
    assert [b.runnable for b in blocks(page)] == [True, True, True, False]


def test_a_placeholder_must_be_filled_and_nothing_else(page: Path) -> None:
    block = blocks(page)[2]
    assert (
        filled(block, task="examples/tasks/fix-median")
        == "cleanroom audit examples/tasks/fix-median\n"
    )
    with pytest.raises(ValueError, match="placeholders"):
        filled(block)
    with pytest.raises(ValueError, match="placeholders"):
        filled(block, task="t", job="j")


def test_a_python_block_runs_in_the_namespace_it_is_given(page: Path) -> None:
    assert run_python(blocks(page)[1], {"y": 2})["x"] == 2


def test_a_test_that_takes_a_block_is_found_by_its_literal_locator(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "def test_it():\n"
        "    doc_block('README.md', 'Calling it')\n"
        "    docs_examples.doc_block(PAGE, 'B', index=2)\n"
        "PAGE = 'docs/a.md'\n"
    )
    assert [k for k, _ in taken_by_tests(tmp_path)] == [
        ("README.md", "Calling it", 0),
        ("docs/a.md", "B", 2),
    ]


def test_a_locator_computed_at_run_time_is_refused(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_it(h):\n    doc_block('README.md', h)\n")
    with pytest.raises(ValueError, match="literals"):
        list(taken_by_tests(tmp_path))


# --- the repository's own pages ---------------------------------------------------------


def _taken() -> dict[tuple[str, str, int], list[Path]]:
    taken: dict[tuple[str, str, int], list[Path]] = {}
    for key, path in taken_by_tests():
        taken.setdefault(key, []).append(path)
    return taken


def _key(block: Block) -> tuple[str, str, int]:
    return block.page, block.heading, block.index


def test_every_runnable_block_is_run_by_a_test_or_says_why_not() -> None:
    taken = _taken()
    unaccounted = [
        b.where for b in all_blocks() if b.runnable and b.not_run is None and _key(b) not in taken
    ]
    assert not unaccounted, (
        "blocks no test runs and whose page does not say why (a paragraph right under the "
        "block beginning 'Not run by the tests:'):\n" + "\n".join(unaccounted)
    )


def test_every_block_a_test_takes_is_on_its_page() -> None:
    for (page, heading, index), paths in _taken().items():
        try:
            block = doc_block(page, heading, index)
        except DocBlockNotFoundError as missing:
            pytest.fail(
                f"{missing} (taken by {', '.join(str(p.relative_to(REPO)) for p in paths)})"
            )
        assert block.runnable, block.where


def test_a_block_a_test_runs_does_not_say_it_is_not_run() -> None:
    taken = _taken()
    both = [b.where for b in all_blocks() if b.not_run is not None and _key(b) in taken]
    assert not both


def test_every_reason_a_page_gives_is_a_sentence() -> None:
    short = [b.where for b in all_blocks() if b.not_run is not None and len(b.not_run) < 12]
    assert not short
