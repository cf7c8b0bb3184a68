"""Fill the verify server's form page in the environment's Chromium.

The harness leases the environment to the rollout and opens the lease's form page (a
setup step); the policy moves to the token field and types the token, then submits.
The verify server, which attributes the submission by the lease, decides the outcome.
"""

from __future__ import annotations

import contextlib
import time

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.lifecycle import wait_until
from cleanroom.rollouts.base import RolloutContext, RolloutSetupError, SmokeTask
from cleanroom.verify_server.client import Lease, VerifierUnavailable, VerifyClient


class FormTask(SmokeTask):
    """Submit the rollout's token through the form page of its lease."""

    name = "form"

    def __init__(self, verify: VerifyClient) -> None:
        self.verify_client = verify

    def setup(self, ctx: RolloutContext) -> None:
        try:
            lease = self.verify_client.lease(ctx.token, env=ctx.env)
        except VerifierUnavailable as exc:
            raise RolloutSetupError(f"no lease: {exc.detail}") from exc
        ctx.state["lease"] = lease
        ctx.open_url(ctx.env, lease.form_url)
        page_up = wait_until(
            lambda: any("submit your token" in w["title"].lower() for w in ctx.handle.windows()),
            15.0,
            0.2,
        )
        if not page_up:
            raise RolloutSetupError("the form page did not show in the browser")

    def policy(self, ctx: RolloutContext) -> None:
        h = ctx.handle
        h.focus(program="browser")
        time.sleep(0.3)
        h.hotkey("Tab")  # from the page body to its first field, the token input
        h.type_text(str(ctx.token))
        h.hotkey("Return")
        time.sleep(1.0)  # the browser posts the form

    def teardown(self, ctx: RolloutContext) -> None:
        # The lease ends with its rollout: a page left open, or another environment that
        # learned the lease's URL, can store nothing more under this rollout's name.
        lease: Lease | None = ctx.state.get("lease")
        if lease is not None:
            with contextlib.suppress(VerifierUnavailable):
                self.verify_client.close_lease(lease.lease_id)

    def verify(self, ctx: RolloutContext) -> Outcome:
        lease: Lease | None = ctx.state.get("lease")
        if lease is None:
            return Outcome.invalid(Reason.ENVIRONMENT_ERROR, "no lease was granted")
        return self.verify_client.verify_form(lease)
