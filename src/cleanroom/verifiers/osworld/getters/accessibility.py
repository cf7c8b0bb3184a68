"""OSWorld's ``accessibility_tree``: the desktop's accessibility tree as its XML.

OSWorld's getter returns what the VM server's ``/accessibility`` gives, the tree its
agents see as ``obs["accessibility_tree"]``. Here the environment's own reader
(`cleanroom.environments.x11.atspi_reader`, which writes the observations' tree) is run
once in the guest, as its user with its desktop session, for one ``tree`` request, so
the metric sees the tree an agent would be shown.

The reader runs among the agent's programs, so its answer is read as untrusted: within
a time limit, at most `atspi.MAX_ANSWER_BYTES`, and the tree checked to be the XML the
reader writes (`atspi.checked_tree`). A reader that cannot run or answer, or that ran
out of time walking the tree, is the infrastructure's fault (`GetterFailed`); OSWorld
would give None and its metric crash.
"""

from __future__ import annotations

import json
from typing import Any

from cleanroom.environments import accessibility as atspi
from cleanroom.verifiers.osworld import guest_program
from cleanroom.verifiers.osworld.commands import decode_output
from cleanroom.verifiers.osworld.details import excerpt
from cleanroom.verifiers.osworld.getters.core import GetterContext, GetterFailed

# The reader answers requests on its standard input; this gives it the one request and
# runs its source (passed as an argument, so no shell reads it) as a script.
_ONE_TREE = (
    "import io, sys\n"
    "source = sys.argv.pop(1)\n"
    'sys.stdin = io.StringIO(\'{"op": "tree"}\\n\')\n'
    "exec(compile(source, 'atspi_reader', 'exec'), {'__name__': '__main__'})\n"
)
_GRACE_S = 15.0  # beyond the reader's own tree limit, for starting it and its answer


def tree_from_answer(stdout: bytes) -> str:
    """The tree in the reader's one-line answer; `GetterFailed` when the answer is too
    long, no JSON, an error, not the XML the reader writes, or a tree the reader's time
    bound cut short. A tree cut by its other bounds is the value: its node and size
    bounds are reached by what the agent left on the bus, and its depth and width bounds
    are OSWorld's own."""
    if len(stdout) > atspi.MAX_ANSWER_BYTES:
        raise GetterFailed(f"the accessibility reader answered over {atspi.MAX_ANSWER_BYTES} bytes")
    try:
        answer = json.loads(decode_output(stdout))
    except ValueError as exc:
        raise GetterFailed("the accessibility reader did not answer in JSON") from exc
    if not isinstance(answer, dict):
        raise GetterFailed(f"the accessibility reader answered {excerpt(repr(answer), 200)}")
    if answer.get("ok") is not True:
        why = excerpt(str(answer.get("error", "no reason given")), 500)
        raise GetterFailed(f"the accessibility reader failed: {why}")
    cut = answer.get("cut")
    if isinstance(cut, list) and "time" in cut:
        # On a busy machine the walk can run out of time through no one's doing, and a
        # node it never reached would score 0.
        raise GetterFailed("the accessibility reader ran out of time walking the tree")
    try:
        return atspi.checked_tree(answer.get("xml"))
    except atspi.AtspiUnavailable as exc:
        raise GetterFailed(f"the accessibility reader's tree: {exc}") from exc


def get_accessibility_tree(ctx: GetterContext, config: dict[str, Any]) -> str:
    """The desktop's accessibility tree in OSWorld's XML format, read now."""
    if not ctx.guest.has_desktop:
        raise GetterFailed(
            f"accessibility_tree needs a desktop session, which guest {ctx.guest.kind!r} "
            "does not have"
        )
    stdout = guest_program.run(
        ctx.guest,
        _ONE_TREE,
        [atspi.READER_SOURCE.read_text()],
        limit=atspi.TREE_TIMEOUT_S + _GRACE_S,
        what="the accessibility reader",
        fails_as=GetterFailed,
    )
    return tree_from_answer(stdout)
