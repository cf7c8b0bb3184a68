"""The system call filter every sandboxed process runs under: kernel keys and mounts are
refused, each with the control that the same call works without the filter."""

from __future__ import annotations

import platform
import subprocess

import pytest

from cleanroom.environments.session.syscall_filter import DENIED, SYSTEM_PYTHON, filtered

pytestmark = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="the key calls are numbered for x86_64 here"
)

ADD_KEY = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
key = libc.syscall(248, b"user", b"cleanroom-filter-test", b"x", 1, -4)
print(key if key < 0 else "made", ctypes.get_errno())
if key >= 0:
    libc.syscall(250, 21, key)  # KEYCTL_INVALIDATE: leave no key behind
"""


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_a_kernel_key_is_refused_under_the_filter_and_made_without_it() -> None:
    plain = run([SYSTEM_PYTHON, "-c", ADD_KEY])
    assert plain.stdout.split()[0] == "made", plain.stderr  # the control

    under = run(filtered([SYSTEM_PYTHON, "-c", ADD_KEY]))

    assert under.stdout.split() == ["-1", "1"], under.stderr  # EPERM


def test_a_mount_is_refused_under_the_filter(tmp_path: object) -> None:
    under = run(filtered(["unshare", "--mount", "mount", "-t", "tmpfs", "none", "/mnt"]))
    assert under.returncode != 0
    # The control: the same mount, in a namespace of its own, works without the filter.
    assert run(["unshare", "--mount", "mount", "-t", "tmpfs", "none", "/mnt"]).returncode == 0


def test_the_filter_passes_the_command_its_arguments_and_status() -> None:
    done = run(filtered(["sh", "-c", 'echo "$@"; exit 3', "sh", "a b", "c"]))
    assert (done.stdout, done.returncode) == ("a b c\n", 3)


@pytest.mark.parametrize("call", ["add_key", "keyctl", "mount", "fanotify_init", "bpf"])
def test_the_calls_no_namespace_covers_are_denied(call: str) -> None:
    assert call in DENIED
