"""What the agent's filesystem changes mean to a sealed verification.

Sealed verification does not trust a list of forbidden paths: its verifier runs on the
pristine task image and sees the agent's state only at the task's state paths (the work
dir, and what ``[verifier] state`` names), so a change anywhere else cannot reach it. The
diff of the agent phase is therefore evidence, in two parts:

- **tamper**: the agent wrote into the verifier's own places: the tests folder or the
  reward folder (a planted reward, a FIFO, a read-only folder). Such a write cannot steer
  a sealed verifier either, but it is an attempt at forging: the rollout is scored 0 with
  reason ``tamper`` (the agent's doing, never an exclusion) and the paths are listed;
- **links**: a link of the agent's that, installed in the verifier's container, resolves
  into one of those places or cleanroom's own mounts (`links`): the route by which a
  test that reads the work dir would read the answer key or the reward folder;
- **config**: configuration in the agent's state that a tool of the verifier's would obey
  (`tool_config`): a git filter, hook or fsmonitor in the work dir's repository, a
  start-up file in a home folder that is state; found before the tests run;
- **touched**: while the tests ran, code of the agent's state (the module under test)
  touched the reward folder or changed what the task shipped in ``/tests``, as the runner
  witness's audit hook saw it (`witness`);
- **unseen**: every other change outside the state paths, which the verifier did not see
  (an honest ``apt-get install`` of a tool the agent needed, or a trojaned ``pytest``
  that no verifier process ran). Listed so that a task author can tell which state a
  verifier would need to declare.

A ``C`` entry that is the parent of another entry is the copy-up of a folder on the way
to a deeper change (overlayfs copies every parent up), not a change of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from cleanroom.core.paths import under, under_any
from cleanroom.verifiers.container.decision.config_findings import ToolConfig

SHOWN_PATHS = 20


class ChangeKind(StrEnum):
    """``docker diff`` kinds."""

    MODIFIED = "C"
    ADDED = "A"
    DELETED = "D"

    @classmethod
    def from_docker(cls, code: int) -> ChangeKind:
        """The Engine API's 0/1/2 code as a kind."""
        return (cls.MODIFIED, cls.ADDED, cls.DELETED)[code]


@dataclass(frozen=True, order=True)
class Change:
    """One entry of a container's filesystem diff (``size``: a file's apparent size, when
    the diff was read from the layer itself)."""

    path: str
    kind: ChangeKind
    size: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return f"{self.kind.value} {self.path}"


@dataclass(frozen=True)
class Diff:
    """A container's filesystem diff, how it was read, and what it could not list."""

    changes: list[Change]
    source: str
    incomplete: str = ""


def bytes_under(changes: Iterable[Change], tree: str) -> int:
    """The apparent bytes the changes add or rewrite inside ``tree``."""
    return sum(c.size for c in changes if under(c.path, tree))


@dataclass(frozen=True)
class TamperReport:
    """The agent's writes into the verifier's places, and the changes the verifier never saw."""

    protected: tuple[Change, ...]
    planted: tuple[str, ...]
    unseen: tuple[Change, ...] = field(default=())
    # The agent's links that resolve into the verifier's places in its container, each
    # with where it came to rest (`links.Resolution`).
    links: tuple[str, ...] = field(default=())
    # What code of the agent's touched in the verifier's places while the tests ran, as
    # the runner witness saw it (`witness.WitnessReport.touched`).
    touched: tuple[str, ...] = field(default=())
    # Configuration in the agent's state that a tool of the verifier's would obey.
    config: tuple[ToolConfig, ...] = field(default=())

    @property
    def tampered(self) -> bool:
        return bool(self.protected or self.planted or self.links or self.touched or self.config)

    @property
    def paths(self) -> list[str]:
        """``"A /tests/conftest.py"``-style lines, planted files and links into the
        verifier's places, for details and reports."""
        return (
            [str(c) for c in self.protected]
            + [f"planted {p}" for p in self.planted]
            + [f"link {line}" for line in self.links]
            + [f"touched {line}" for line in self.touched]
            + [f"config {found}" for found in self.config]
        )

    @property
    def unseen_shown(self) -> list[str]:
        """The first unseen changes, for details (the count is kept separately)."""
        return [str(c) for c in self.unseen[:SHOWN_PATHS]]


def classify(
    changes: Iterable[Change],
    *,
    verifier_places: Sequence[str],
    state_paths: Sequence[str],
    planted: Iterable[str] = (),
    baseline: Iterable[Change] = (),
) -> TamperReport:
    """Sort the agent phase's changes into tamper, seen state and unseen changes.

    ``verifier_places`` are the trees only the verifier may write (``/tests``, the reward
    folder); ``planted`` lists what the agent left in the reward folder, which is watched
    outside the diff; ``baseline`` is what the harness changed before the agent started.
    """
    before = set(baseline)
    entries = sorted(set(changes) - before)
    parents = {_parent(c.path) for c in entries}
    counted = [c for c in entries if not (c.kind is ChangeKind.MODIFIED and c.path in parents)]
    protected = tuple(c for c in counted if under_any(c.path, verifier_places))
    unseen = tuple(c for c in counted if c not in protected and not under_any(c.path, state_paths))
    return TamperReport(protected, tuple(sorted(planted)), unseen)


def _parent(path: str) -> str:
    head = path.rsplit("/", 1)[0]
    return head or "/"
