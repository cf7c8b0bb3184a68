"""bench/RESULTS.md: each benchmark owns one ``## `` section and replaces only that one."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def write_section(
    heading: str, text: str, path: Path = RESULTS, *, keep_history: bool = False
) -> None:
    """Replace the section that starts with the line ``heading`` by ``text`` (which starts
    with that line too), or add it at the end; every other section is left as it was.
    With ``keep_history``, the old section's ``### `` subsections (the runs before) are
    kept below the new text."""
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    body = text.strip("\n")
    if not body.startswith(heading + "\n"):
        raise ValueError(f"a section must start with its heading {heading!r}")
    pattern = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.S | re.M)
    found = pattern.search(old)
    if found and keep_history:
        history = re.search(r"^### .*", found.group(0), re.S | re.M)
        if history:
            body += "\n\n" + history.group(0).strip("\n")
    if found:
        new = pattern.sub(lambda _: body + "\n\n", old, count=1)
    else:
        new = old.rstrip("\n") + "\n\n" + body + "\n"
    path.write_text(new.rstrip("\n") + "\n", encoding="utf-8")
