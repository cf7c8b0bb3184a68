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

Clearing a keyring unlinks its keys at once, but the kernel drops its references to them
only after a grace period, and destroys an unlinked keyring (and so lets go of what it
held) later still, from its key collector. Until then a key stays reachable by its serial.
So the clearing process first joins a session keyring of its own, links the two keyrings
into it (so it possesses, and may read, everything under them), notes every key and
keyring it can reach under them, clears them, and is done only when the kernel refuses
every noted serial; a key still reachable after the wait is reported, not taken as gone.
"""

from __future__ import annotations

import platform
import subprocess

SYSTEM_PYTHON = "/usr/bin/python3"
# keyctl's number by machine; keys have no libc wrapper.
_KEYCTL = {"x86_64": 250, "aarch64": 219}
KEYCTL_GET_KEYRING_ID = 0
KEYCTL_JOIN_SESSION_KEYRING = 1
KEYCTL_DESCRIBE = 6
KEYCTL_CLEAR = 7
KEYCTL_LINK = 8
KEYCTL_READ = 11
KEY_SPEC_SESSION_KEYRING = -3
KEY_SPEC_USER_KEYRING = -4
KEY_SPEC_USER_SESSION_KEYRING = -5
_TIMEOUT_S = 15.0
_WAIT_S = 5.0

_CLEAR = """
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def keyctl(*args):
    return libc.syscall({keyctl}, *args)
RINGS = ({user}, {session})
failed = []
keyctl({join}, None)  # a session keyring of this process's own, gone when it exits
# The two keyrings themselves live as long as the user namespace: the user session
# keyring holds a link to the user keyring from the moment the kernel makes them (the
# first lookup of a uid since boot), and that link is not a key the uid left.
rings = {{keyctl({get_id}, ring, 1) for ring in RINGS}}
for ring in RINGS:
    keyctl({link}, ring, {own_session})
noted, todo = set(), list(RINGS)
while todo and len(noted) < 65536:
    ring = todo.pop()
    buf = ctypes.create_string_buffer(4 * 4096)
    size = keyctl({read}, ring, buf, len(buf))
    if size <= 0:
        continue
    for serial in (ctypes.c_int32 * (min(size, len(buf)) // 4)).from_buffer(buf):
        if serial > 0 and serial not in noted and serial not in rings:
            noted.add(serial)
            todo.append(serial)  # a keyring's own keys; reading a plain key gives no serials
for ring in RINGS:
    if keyctl({clear}, ring) != 0:
        failed.append(f"{{ring}}: errno {{ctypes.get_errno()}}")
deadline = time.monotonic() + {wait_s}
desc = ctypes.create_string_buffer(512)
while not failed:
    live = [s for s in sorted(noted) if keyctl({describe}, s, desc, len(desc)) >= 0]
    if not live:
        break
    if time.monotonic() > deadline:
        failed.append(f"keys still reachable after {wait_s} s: {{live[:8]}}")
        break
    time.sleep(0.01)
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
        own_session=KEY_SPEC_SESSION_KEYRING,
        keyctl=keyctl,
        get_id=KEYCTL_GET_KEYRING_ID,
        join=KEYCTL_JOIN_SESSION_KEYRING,
        describe=KEYCTL_DESCRIBE,
        clear=KEYCTL_CLEAR,
        link=KEYCTL_LINK,
        read=KEYCTL_READ,
        wait_s=_WAIT_S,
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
