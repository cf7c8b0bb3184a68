"""cleanroom: rewards you can trust.

Verifiers that cannot be fooled by the known forging routes, environments whose
isolation is measured by detectors that are proven to fire, and a published isolation
number only next to a positive control that fired.
"""

from cleanroom.core.isolation import IsolationRow, RowResult, Window, judge_window
from cleanroom.core.outcomes import Cause, Outcome, Reason, Status
from cleanroom.core.publish import ControlResult, Publication, Refusal, publish
from cleanroom.core.tokens import RolloutId, Token, TokenHit, mint, parse, scan_bytes
from cleanroom.tree_scan import scan_tree

__version__ = "0.1.0"

__all__ = [
    "Cause",
    "ControlResult",
    "IsolationRow",
    "Outcome",
    "Publication",
    "Reason",
    "Refusal",
    "RolloutId",
    "RowResult",
    "Status",
    "Token",
    "TokenHit",
    "Window",
    "judge_window",
    "mint",
    "parse",
    "publish",
    "scan_bytes",
    "scan_tree",
]
