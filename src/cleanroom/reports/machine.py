"""What machine a run ran on: kernel, distribution and the versions of the parts it used.

A published isolation number is a claim about one stack; the report names it.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from pathlib import Path

from cleanroom.environments.interface import SandboxLimits

# Debian package names of the parts whose versions a report names.
PACKAGES = {
    "xvfb": "xvfb",
    "libreoffice": "libreoffice-writer",
    "chromium": "chromium",
    "at-spi": "at-spi2-core",
    "docker": "docker.io",
}


def _distribution() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "unknown"


def _package_version(package: str) -> str:
    if not shutil.which("dpkg-query"):
        return "unknown (no dpkg)"
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "not installed"


def machine_info() -> dict[str, str]:
    """Kernel, distribution, Python, core count and the versions of the desktop parts."""
    info = {
        "kernel": f"{platform.system()} {platform.release()}",
        "distribution": _distribution(),
        "python": sys.version.split()[0],
        "cores": str(_cores()),
    }
    info.update({name: _package_version(pkg) for name, pkg in PACKAGES.items()})
    return info


def limits_info(
    limits: SandboxLimits, canary_cpu_shares: int, harness_reserve_mib: int
) -> dict[str, str]:
    """What each environment's sandbox may take, as the report's machine section says it."""
    from cleanroom.environments.session.cgroups import (
        ENVIRONMENTS,
        ENVIRONMENTS_CPU_SHARES,
        HARNESS_OOM_SCORE_ADJ,
    )
    from cleanroom.environments.session.output_log import (
        LOG_FOLDER_MAX_BYTES,
        PROGRAM_LOG_MAX_BYTES,
    )

    return {
        "sandbox runtime": f"runc {_package_version('runc')}",
        "env memory limit": f"{limits.memory_mib} MiB (swap, tmpfs and home pages included)",
        "env task limit": str(limits.pids),
        "env CPU weight": f"{limits.cpu_shares} (canary {canary_cpu_shares}) within the group",
        "env tmpfs size": (
            f"{limits.tmpfs_mib} MiB each (/tmp, /var/tmp, /dev/shm, /run/lock, runtime folder)"
        ),
        "env home": f"a tmpfs of {limits.home_mib} MiB of its own",
        "env ptys": f"a devpts of its own, at most {limits.ptys} of the kernel's pool",
        "environments' group": (
            f"{ENVIRONMENTS}: CPU weight {ENVIRONMENTS_CPU_SHARES} in all, as one harness task; "
            f"memory: the machine's less {harness_reserve_mib} MiB for the harness "
            f"(whose OOM score is {HARNESS_OOM_SCORE_ADJ})"
        ),
        "X servers": "each in a sandbox of its own, as a user of its own, no home in view",
        "env output on the host": (
            f"through pipes: at most {PROGRAM_LOG_MAX_BYTES >> 20} MiB a log and "
            f"{LOG_FOLDER_MAX_BYTES >> 20} MiB its log folder in all, the rest dropped"
        ),
    }


def _cores() -> int:
    import os

    return os.cpu_count() or 0
