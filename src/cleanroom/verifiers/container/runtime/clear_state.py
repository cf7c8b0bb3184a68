"""Clearing the state paths in the verifier's container before the agent's state is
installed: one script every runtime runs there as root (the pristine image's own ``sh``,
``rm`` and ``mkdir``, before anything of the agent's is in the container), its arguments
and what it answers."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

# Removes each state path, then makes each parent folder, then names (NUL-ended) each
# probed path that is absent and has its parent folder, so needs no clearing:
# ``clear PATH... -- PARENT... --probe PROBED...``.
CLEAR_STATE_SCRIPT = r"""
part=0
for p in "$@"; do
  case "$p" in --) part=1; continue;; --probe) part=2; continue;; esac
  case $part in
    0) rm -rf -- "$p";;
    1) mkdir -p -- "$p";;
    2) d=${p%/*}
       if [ ! -e "$p" ] && [ ! -L "$p" ] && [ -d "${d:-/}" ]; then printf '%s\0' "$p"; fi;;
  esac
done
"""


def clear_state_args(paths: Sequence[str], probe: Sequence[str]) -> list[str]:
    """The script's arguments: ``paths`` to clear, their parents to make, ``probe``."""
    parents = sorted({posixpath.dirname(p) or "/" for p in paths})
    return [*paths, "--", *parents, "--probe", *probe]


def absent_probed(output: str, probe: Sequence[str]) -> set[str]:
    """The ``probe`` paths the script named in ``output``: absent, with their parent."""
    return {p for p in output.split("\0")[:-1] if p in probe}
