"""Type a sentence into Writer and save it; the saved document is read from the host."""

from __future__ import annotations

import time

from cleanroom.core.odt import OdtError, odt_text
from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.environments.interface import DOCUMENT
from cleanroom.host_files import read_beneath
from cleanroom.lifecycle import wait_until
from cleanroom.rollouts.base import RolloutContext, SmokeTask

SAVE_TIMEOUT_S = 8.0


def sentence(token: object) -> str:
    """The sentence the policy types (it carries the token)."""
    return f"this sentence was typed by rollout {token} and saved."


class WriterTask(SmokeTask):
    """Type a tokened sentence into the open document and save it with Ctrl+S."""

    name = "writer"

    def policy(self, ctx: RolloutContext) -> None:
        h = ctx.handle
        h.focus(program="writer")
        h.type_text(sentence(ctx.token))
        time.sleep(0.2)  # let Writer take the last keys before the save shortcut
        h.hotkey("ctrl+s")

    def verify(self, ctx: RolloutContext) -> Outcome:
        path = ctx.home / DOCUMENT
        expected = sentence(ctx.token)
        seen: dict[str, str] = {}

        def saved() -> bool:
            try:
                seen["text"] = odt_text(read_beneath(ctx.home, path))
            except (FileNotFoundError, OdtError) as exc:
                # Gone, replaced (a FIFO, a folder, a link to a device) or no document:
                # what the agent left in the document's place, read again until the end.
                seen.pop("text", None)
                seen["broken"] = str(exc)
                return False
            except OSError as exc:
                seen["error"] = str(exc)
                return False
            return expected in seen["text"]

        if wait_until(saved, SAVE_TIMEOUT_S, 0.2):
            return Outcome.success(document=str(path))
        if "text" in seen:
            return Outcome.failure(document=str(path), text=seen["text"][:500])
        if "broken" in seen:  # the agent's document, not the harness, is what is broken
            return Outcome.failure(document=str(path), broken=seen["broken"][:500])
        return Outcome.invalid(
            Reason.ENVIRONMENT_ERROR, f"the document could not be read: {seen.get('error')}"
        )
