"""The HTML pages the agent sees: the token form, its confirmation and the frame counter.

Pages are plain strings with every interpolated value escaped. The frame counter's
script is static (it finds its lease from its own URL), so the Content-Security-Policy
can allow exactly that script by hash and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import re
from html import escape

FORM_CSP = "default-src 'none'; form-action 'self'; style-src 'unsafe-inline'"

_FORM = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Submit your token</title></head>
<body{style}>
<h1>Submit your token</h1>
<form method="post" action="/v1/form/{lease}" accept-charset="utf-8">
<label for="token">Token</label>
<input type="text" id="token" name="token" autocomplete="off" spellcheck="false" size="48">
<button type="submit" id="submit">Submit</button>
</form>
</body>
</html>
"""

_CONFIRMATION = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Token received</title></head>
<body>
<h1>Token received</h1>
<p id="received">Received <span id="size">{size}</span> bytes as submission
<span id="submission">{submission_id}</span>.</p>
<pre id="text">{text}</pre>
</body>
</html>
"""

# Counts animation frames only while the page is visible and reports the count in
# bounded deltas: every quarter second (browsers slow timers in hidden tabs to about once
# a second, which still delivers frames counted just before hiding), and at once when the
# page is hidden or left.
FRAMES_SCRIPT = """
(() => {
  "use strict";
  const reportUrl = location.pathname;
  const maxDelta = 1000;
  const shown = document.getElementById("frames");
  let counted = 0;
  let pending = 0;
  function tick() {
    if (document.visibilityState === "visible") {
      counted += 1;
      pending += 1;
    }
    requestAnimationFrame(tick);
  }
  function report(keepalive) {
    while (pending > 0) {
      const delta = Math.min(pending, maxDelta);
      pending -= delta;
      fetch(reportUrl, {
        method: "POST",
        headers: {"Content-Type": "application/json"},
        body: JSON.stringify({frames: delta}),
        keepalive: keepalive,
      }).catch(() => {});
    }
    shown.textContent = String(counted);
  }
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") report(true);
  });
  window.addEventListener("pagehide", () => report(true));
  setInterval(() => report(false), 250);
  requestAnimationFrame(tick);
})();
"""

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(FRAMES_SCRIPT.encode()).digest()).decode()
FRAMES_CSP = f"default-src 'none'; script-src 'sha256-{_SCRIPT_HASH}'; connect-src 'self'"

_FRAMES = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Frame counter</title></head>
<body>
<h1>Frame counter</h1>
<p>Frames counted while visible: <span id="frames">0</span></p>
<script>{script}</script>
</body>
</html>
"""


_COLOUR_RE = re.compile(r"[0-9a-f]{6}\Z")


class BadColour(ValueError):
    """A page colour that is not six lowercase hex digits (``rrggbb``)."""


def check_colour(colour: str) -> str:
    """Return ``colour`` if it is ``rrggbb`` in lowercase hex; raise `BadColour` otherwise."""
    if not _COLOUR_RE.match(colour):
        raise BadColour(f"a page colour is six lowercase hex digits (rrggbb), got {colour!r}")
    return colour


def form_page(lease_id: str, colour: str | None = None) -> str:
    """The form the agent types its token into: one text input named ``token``.

    With ``colour`` (``rrggbb``) the page's background is that colour, so a screenshot
    shows whose page it is (observation privacy gives every environment its own).
    """
    style = "" if colour is None else f' style="background:#{check_colour(colour)}"'
    return _FORM.format(lease=escape(lease_id, quote=True), style=style)


def confirmation_page(text: str, size: int, submission_id: int) -> str:
    """The page shown after a submission: what was stored, escaped, and its id."""
    return _CONFIRMATION.format(text=escape(text), size=size, submission_id=submission_id)


def frames_page() -> str:
    """The frame-counter page (the same for every lease: its script reads its own URL)."""
    return _FRAMES.format(script=FRAMES_SCRIPT)
