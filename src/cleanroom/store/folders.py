"""Run folders are the harness's alone.

A run folder holds every environment's tokens (the action log, the run database, the
verify server's leases and key, the pool's key and logs), so it is made mode 0700 and
owned by the harness: an environment's user cannot list or read anything in it, even
where the folder lies on a path the environment can see.
"""

from __future__ import annotations

import os
from pathlib import Path


def private_folder(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` (and missing parents) if needed and make it mode 0700."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    return folder
