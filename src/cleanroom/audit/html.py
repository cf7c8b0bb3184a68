"""An audit as one self-contained HTML page: counts per flag, a sortable table of tasks
with their flags, and each finding's evidence.

The styles and the small sorting script are inline and every link is an anchor in the
same file, so the page can be mailed or archived; every value is escaped (autoescape).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import jinja2

from cleanroom.audit.findings import Flag
from cleanroom.audit.summary import AuditSummary

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("cleanroom.audit", "templates"),
    autoescape=jinja2.select_autoescape(["html"]),
    undefined=jinja2.StrictUndefined,
)

_MEANING = {
    Flag.BUILD_FAILS: "the environment does not build",
    Flag.PASSES_WITH_NO_WORK: "a no-op agent passes under sealed",
    Flag.ORACLE_FAILS: "the task's own solution fails under sealed",
    Flag.FLAKY: "repeated runs of the same agent disagree",
    Flag.ANSWERS_VISIBLE: "tests, solution or expected outputs readable by the agent",
    Flag.NEAR_MISS_ACCEPTED: "the OSWorld checker accepts a known-wrong action",
    Flag.GOLD_FAILS: "the OSWorld checker fails its gold state (the expected file placed "
    "where the result is read, or FAIL on an infeasible task)",
    Flag.TRUSTS_AGENT_EXIT: "the tests pass when the agent's code succeeds at once and prints "
    "nothing: they trust its exit",
    Flag.FORGEABLE_SHARED: "forging probes (a planted reward, a link to the tests' own file) "
    "fool the naive verifier (shared); sealed holds",
    Flag.FORGEABLE_SEALED: "a forging probe fooled sealed: a cleanroom bug",
}


def render(summary: AuditSummary, *, title: str = "cleanroom audit") -> str:
    """The whole page as one HTML string."""
    data = summary.to_json()
    return _ENV.get_template("audit.html").render(
        title=title,
        now=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        data=data,
        flags=[
            (f.value, f.severity, _MEANING[f], data["counts"]["flags"].get(f.value, 0))
            for f in Flag
        ],
        severity={f.value: f.severity for f in Flag},
    )


def write(summary: AuditSummary, path: Path) -> None:
    """Write the page to ``path``."""
    path.write_text(render(summary), encoding="utf-8")
