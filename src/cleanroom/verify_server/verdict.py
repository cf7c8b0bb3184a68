"""Deciding a form task from what the server stored: pure, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cleanroom.core.outcomes import Outcome

# Whitespace around a typed token is an artefact of typing, not a different answer.
_ASCII_SPACE = " \t\r\n\f\v"


def form_verdict(token: str, texts: Sequence[str], **details: Any) -> Outcome:
    """Success if some stored text is exactly ``token`` (surrounding ASCII space ignored),
    failure otherwise: the server answered, so the result is valid either way."""
    matched = [i for i, text in enumerate(texts) if text.strip(_ASCII_SPACE) == token]
    info = {**details, "submissions": len(texts), "matched": len(matched)}
    if matched:
        return Outcome.success(**info)
    return Outcome.failure(**info)
