"""What a node of a run across nodes sends its driver: the records of its own run
database since the last pull, as plain data (`NodeBatch`), and where the next pull starts
(`Cursor`).

The tables a harness only appends to are sent by id: everything past the last id sent.
The rollouts, whose outcome can change after they end (an audit or a canary event makes
them invalid), are sent by change number (`RunStore._next_change`). The small tables
(windows, environments, watches) are sent whole every time. The driver keeps each record
once however often it arrives (`RunStore.copy_from_node`), so a pull repeated after a
lost reply loses and doubles nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The tables a harness only appends to, with the columns a node sends of each (its id
# goes first, and becomes ``source_id`` at the driver).
APPENDED: dict[str, tuple[str, ...]] = {
    "isolation_rows": ("window", "test", "trial", "from_env", "to_env", "result", "detail", "at"),
    "canary_samples": (
        "window",
        "at",
        "ok",
        "focused_text_sha256",
        "window_list_sha256",
        "clipboard_sha256",
        "detail",
        "sources",
    ),
    "console_samples": ("window", "at", "ok", "pane_sha256", "history_size", "detail", "sources"),
    "verifier_results": ("rollout_id", "verifier", "outcome", "reason", "score", "details", "at"),
    "control_results": (
        "at",
        "typing_cross",
        "typing_trials",
        "clipboard_cross",
        "clipboard_trials",
        "fired",
        "not_claimed",
        "detail",
        "clipboard_skew_ms",
    ),
    "latency_samples": ("window", "test", "env", "phase", "at", "ms"),
    "leaky_controls": ("test", "leak", "fired", "rows", "cross", "detail", "at"),
}
ROLLOUT_COLUMNS = (
    "rollout_id",
    "env",
    "window",
    "token",
    "task",
    "started_at",
    "ended_at",
    "outcome",
    "reason",
    "score",
    "detail",
    "change_seq",
)
WINDOW_COLUMNS = ("idx", "started_at", "ended_at", "status")
ENVIRONMENT_COLUMNS = ("name", "unix_user", "display", "generation", "created_at", "meta")
WATCH_COLUMNS = ("name", "active", "detail", "at")
# At most this many records of one table in one batch: a node far behind is caught up
# over several pulls, each a bounded transaction at the driver.
BATCH_LIMIT = 5000


@dataclass
class Cursor:
    """Where a node's next pull starts: the last id sent of each appended table, and the
    last rollout change number."""

    ids: dict[str, int] = field(default_factory=lambda: dict.fromkeys(APPENDED, 0))
    change: int = 0

    def after(self, batch: NodeBatch) -> Cursor:
        """The cursor past ``batch``."""
        ids = dict(self.ids)
        for table, rows in batch.appended.items():
            if rows:
                ids[table] = max(ids.get(table, 0), max(int(r[0]) for r in rows))
        change = max([self.change, *(int(r[-1]) for r in batch.rollouts)])
        return Cursor(ids, change)


@dataclass
class NodeBatch:
    """One pull's records from a node's run database."""

    appended: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    rollouts: list[tuple[Any, ...]] = field(default_factory=list)
    windows: list[tuple[Any, ...]] = field(default_factory=list)
    environments: list[tuple[Any, ...]] = field(default_factory=list)
    watches: list[tuple[Any, ...]] = field(default_factory=list)

    @property
    def records(self) -> int:
        """How many appended records and rollout changes it holds."""
        return sum(len(rows) for rows in self.appended.values()) + len(self.rollouts)

    @property
    def full(self) -> bool:
        """Whether some table hit `BATCH_LIMIT`: there is more to pull at once."""
        return len(self.rollouts) >= BATCH_LIMIT or any(
            len(rows) >= BATCH_LIMIT for rows in self.appended.values()
        )
