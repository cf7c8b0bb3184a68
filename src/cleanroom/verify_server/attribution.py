"""Attribution of a submission: pure, decided only by the lease and the submitted bytes."""

from __future__ import annotations

from cleanroom.core.tokens import found_tokens
from cleanroom.store.submissions import LeaseRecord, NewSubmission


def attribute(lease: LeaseRecord, body: bytes, at: float) -> NewSubmission:
    """The record for ``body`` submitted through ``lease`` at time ``at``.

    The environment, rollout and window are the lease's: nothing the request claims is
    consulted. Every token inside the text is listed with the environment it names, and
    the submission is ``cross`` when any of them names another environment.
    """
    found = found_tokens(body)
    tokens: tuple[str, ...]
    envs: tuple[str, ...]
    if len(found) == 1:  # the form's usual submission: one token, typed or pasted
        tokens, envs = (found[0][0],), (found[0][1],)
    else:
        tokens = tuple(token for token, _ in found)
        envs = tuple(sorted({env for _, env in found}))
    cross = any(e != lease.env for e in envs)
    return NewSubmission(
        lease_id=lease.lease_id,
        env=lease.env,
        rollout_id=lease.rollout_id,
        window=lease.window,
        submitted_at=at,
        body=body,
        found_tokens=tokens,
        found_envs=envs,
        cross=cross,
    )
