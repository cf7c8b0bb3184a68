"""What some attacks need beside their script, made on the host: the native parts (an NSS
module), built once per source, and the variant of the target task an attack runs against.

Task images carry no compiler, so an attack's C source is compiled here with the host's
``cc`` and handed to the attack script as a file. Task images are Debian like the host,
so a shared object built here loads there.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from cleanroom.redteam.catalogue import Attack, asset_source, variant_files


class AssetBuildFailed(Exception):
    """An attack's native part could not be compiled; says why and what to install."""


def assets_for(attack: Attack) -> tuple[tuple[str, bytes], ...]:
    """``(file name, bytes)`` for every asset the attack's script expects."""
    return tuple((f"{name}.so", _shared_object(name)) for name in attack.assets)


def variant_task(attack: Attack, target: Path, into: Path) -> Path:
    """The task folder ``attack`` runs against: ``target`` itself, or for an attack with
    a variant a copy of it in ``into`` with the variant's files laid over, named
    ``<target>-<variant>``."""
    if not attack.variant:
        return target
    root = into / f"{target.name}-{attack.variant}"
    if not root.exists():
        shutil.copytree(target, root, symlinks=True)
        for rel, data in variant_files(attack.variant).items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            if path.suffix == ".sh":
                path.chmod(0o755)
    return root


@cache
def _shared_object(name: str) -> bytes:
    source = asset_source(name)
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise AssetBuildFailed(
            f"the {name} attack needs a C compiler on the host (apt-get install gcc libc6-dev)"
        )
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    with tempfile.TemporaryDirectory(prefix=f"cleanroom-asset-{digest}-") as tmp:
        src, out = Path(tmp, f"{name}.c"), Path(tmp, f"{name}.so")
        src.write_text(source)
        built = subprocess.run(
            [compiler, "-shared", "-fPIC", "-O2", "-o", str(out), str(src)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if built.returncode != 0:
            raise AssetBuildFailed(f"compiling {name}.c failed: {built.stderr[-1000:]}")
        return out.read_bytes()
