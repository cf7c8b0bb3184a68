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
LIST = "import sys; print(open('/proc/keys').read())"


def _as(account: pwd.struct_passwd, source: str) -> str:
    done = subprocess.run(
        ["/usr/bin/python3", "-I", "-c", source],
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
    assert int(_as(account, PLANT)) > 0
    # The control: the key is still there for the next process of the uid.
    assert "cleanroom-keyrings-test" in _as(account, LIST)
    assert clear_keyrings(account.pw_uid, account.pw_gid) is None
    assert "cleanroom-keyrings-test" not in _as(account, LIST)
