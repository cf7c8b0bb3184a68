"""Kernel keys a uid holds: cleared whenever the pool takes a uid and gives it back.

A key lives in its uid's user keyring, which belongs to the user namespace, not to any
process: it outlives every process of the uid, its home and ``userdel``, and the next
account that ``useradd`` gives the same uid finds it there. The sandbox's filter refuses
every key call, so an environment cannot make one; a leaky setup without the filter, an
earlier tool, or a test can. So an account's keyrings are cleared when it is created
(whatever an earlier holder of the uid left) and when it is removed.

Only the uid itself can reach its keyrings (root outside has no view of them), so the
clearing runs as that uid: a short process of Debian's own Python, isolated, that asks
the kernel to clear the user keyring and the user session keyring.
"""

from __future__ import annotations

import platform
import subprocess

SYSTEM_PYTHON = "/usr/bin/python3"
# keyctl's number by machine; keys have no libc wrapper.
_KEYCTL = {"x86_64": 250, "aarch64": 219}
KEYCTL_CLEAR = 7
KEY_SPEC_USER_KEYRING = -4
KEY_SPEC_USER_SESSION_KEYRING = -5
_TIMEOUT_S = 10.0

_CLEAR = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
failed = []
for ring in ({user}, {session}):
    if libc.syscall({keyctl}, {clear}, ring) != 0:
        failed.append(f"{{ring}}: errno {{ctypes.get_errno()}}")
print("; ".join(failed) or "cleared")
sys.exit(1 if failed else 0)
"""


def clear_command() -> list[str] | None:
    """The command that clears the keyrings of the uid it runs as (None: no key calls
    known for this machine)."""
    keyctl = _KEYCTL.get(platform.machine())
    if keyctl is None:
        return None
    source = _CLEAR.format(
        user=KEY_SPEC_USER_KEYRING,
        session=KEY_SPEC_USER_SESSION_KEYRING,
        keyctl=keyctl,
        clear=KEYCTL_CLEAR,
    )
    return [SYSTEM_PYTHON, "-I", "-S", "-c", source]


def clear_keyrings(uid: int, gid: int) -> str | None:
    """Clear ``uid``'s user and user session keyrings; None when done, else why not."""
    argv = clear_command()
    if argv is None:
        return f"no key system call numbers for {platform.machine()}"
    try:
        done = subprocess.run(
            argv, user=uid, group=gid, extra_groups=[], capture_output=True, text=True,
            timeout=_TIMEOUT_S, cwd="/", env={"PATH": "/usr/bin:/bin"},
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot clear the keyrings of uid {uid}: {exc}"
    if done.returncode != 0:
        return f"clearing the keyrings of uid {uid}: {done.stdout.strip() or done.stderr.strip()}"
    return None
