"""A uid's kernel keys outlive its processes and its user; the pool clears them when it
takes a uid and when it gives it back."""

from __future__ import annotations

import os
import platform
import pwd
import secrets
import subprocess
from collections.abc import Iterator

import pytest

from cleanroom.environments.session.keyrings import clear_keyrings

pytestmark = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="the key calls are numbered for x86_64 here"
)

PLANT = (
    "import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
    "libc.syscall(250, 8, -4, -3); "  # the user keyring linked into the session's
    "k = libc.syscall(248, b'user', b'cleanroom-keyrings-test', b'x', 1, -4); print(k)"
)
# Whether the uid can still reach the key by its serial: KEYCTL_DESCRIBE. /proc/keys is
# no proof either way: a key unlinked from every keyring stays listed there until the
# kernel's key collector runs (asynchronous, later on a loaded machine), but the kernel
# refuses every lookup of it from the moment its last link goes.
REACH = (
    "import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
    "buf = ctypes.create_string_buffer(256); "
    "n = libc.syscall(250, 6, int(sys.argv[1]), buf, 256); "
    "print(buf.value.decode() if n > 0 else f'errno {ctypes.get_errno()}')"
)
ENOKEY = 126


def _as(account: pwd.struct_passwd, source: str, *args: str) -> str:
    done = subprocess.run(
        ["/usr/bin/python3", "-I", "-c", source, *args],
        user=account.pw_uid, group=account.pw_gid, extra_groups=[],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return done.stdout


@pytest.fixture
def account() -> Iterator[pwd.struct_passwd]:
    if os.geteuid() != 0:
        pytest.fail("making users needs root")
    user = f"crkey{secrets.token_hex(3)}"
    subprocess.run(["useradd", "-M", "-U", user], check=True)
    entry = pwd.getpwnam(user)
    try:
        yield entry
    finally:
        clear_keyrings(entry.pw_uid, entry.pw_gid)
        subprocess.run(["userdel", user], check=False)


def test_a_key_outlives_its_process_and_is_gone_once_the_keyrings_are_cleared(
    account: pwd.struct_passwd,
) -> None:
    serial = int(_as(account, PLANT))
    assert serial > 0
    # The control: the key is still there for the next process of the uid.
    assert "cleanroom-keyrings-test" in _as(account, REACH, str(serial))
    assert clear_keyrings(account.pw_uid, account.pw_gid) is None
    assert _as(account, REACH, str(serial)).strip() == f"errno {ENOKEY}"


PLANT_NESTED = (
    "import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
    "libc.syscall(250, 8, -4, -3); "
    "ring = libc.syscall(248, b'keyring', b'cleanroom-inner', None, 0, -4); "
    "print(libc.syscall(248, b'user', b'cleanroom-nested-test', b'x', 1, ring))"
)


def test_a_key_in_a_keyring_under_the_user_keyring_is_gone_too(
    account: pwd.struct_passwd,
) -> None:
    serial = int(_as(account, PLANT_NESTED))
    assert "cleanroom-nested-test" in _as(account, REACH, str(serial))
    assert clear_keyrings(account.pw_uid, account.pw_gid) is None
    assert _as(account, REACH, str(serial)).strip() == f"errno {ENOKEY}"


HOLD = (
    "import ctypes, sys, time; libc = ctypes.CDLL(None, use_errno=True); "
    "libc.syscall(250, 1, None); "  # a session keyring of its own,
    "libc.syscall(250, 8, -4, -3); "  # which reaches the user keyring (so the key is its own)
    "ok = libc.syscall(250, 8, int(sys.argv[1]), -3) == 0; "  # and holds the key itself too
    "print('held' if ok else f'errno {ctypes.get_errno()}', flush=True); time.sleep(60)"
)


def test_a_key_something_else_still_holds_is_reported_not_taken_as_gone(
    account: pwd.struct_passwd,
) -> None:
    """The leaky case: a live process of the uid keeps a link to the key in a keyring of
    its own, so clearing the uid's keyrings cannot make it unreachable."""
    serial = int(_as(account, PLANT))
    holder = subprocess.Popen(
        ["/usr/bin/python3", "-I", "-c", HOLD, str(serial)],
        user=account.pw_uid, group=account.pw_gid, extra_groups=[],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        why = clear_keyrings(account.pw_uid, account.pw_gid)
        assert why is not None and "still reachable" in why and str(serial) in why
    finally:
        holder.kill()
        holder.wait()


def test_a_uid_whose_keyrings_the_kernel_makes_now_is_cleared_at_once() -> None:
    """The first lookup of a uid's keyrings since boot makes them, the user session
    keyring holding a link to the user keyring: that link is the kernel's, not a key the
    uid left, and the keyrings themselves stay (they belong to the user namespace)."""
    if os.geteuid() != 0:
        pytest.fail("running as another uid needs root")
    uid = 200_000 + secrets.randbelow(100_000)  # no account: a uid nothing has used
    assert clear_keyrings(uid, uid) is None
    assert clear_keyrings(uid, uid) is None
