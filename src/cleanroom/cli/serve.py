"""``cleanroom serve``: run the verify server (leases, form, frames, audit); the command
itself lives with the server, which runs it as its own entry point too."""

from __future__ import annotations

from cleanroom.verify_server.serve import serve

__all__ = ["serve"]
