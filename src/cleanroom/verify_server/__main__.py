"""``python -m cleanroom.verify_server``: the same as ``cleanroom serve``."""

from __future__ import annotations

import typer

from cleanroom.verify_server.serve import serve

if __name__ == "__main__":
    typer.run(serve)
