"""The sandbox's mount plan: what it keeps, what it covers, and in which order."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.environments.policy.http import env_key
from cleanroom.environments.session import syscall_filter
from cleanroom.environments.session.port_forward import loopback_port
from cleanroom.environments.session.sandbox import SandboxLayout, entry_command, mount_plan

ROOT = Path("/var/lib/cleanroom/pools/abc123")
LAYOUT = SandboxLayout(
    writable=(ROOT / "homes/env01", ROOT / "run/env01"),
    hidden=(ROOT / "homes", ROOT / "run"),
    display_number=123,
)


def _index(plan: list[list[str]], step: list[str]) -> int:
    return plan.index(step)


def test_everything_is_read_only_before_the_private_and_own_places_are_mounted() -> None:
    plan = mount_plan(LAYOUT)
    readonly = _index(plan, ["readonly", "/"])
    for tmp in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
        assert _index(plan, ["tmpfs", tmp, "1777"]) > readonly
    for own in LAYOUT.writable:
        assert _index(plan, ["writable", str(own)]) > readonly


def test_other_environments_folders_are_covered_before_the_own_ones_go_back() -> None:
    plan = mount_plan(LAYOUT)
    homes_covered = _index(plan, ["tmpfs", str(ROOT / "homes"), "0755"])
    own_home_back = _index(plan, ["bind", f"{LAYOUT.stage}/own0", str(ROOT / "homes/env01")])
    staged = _index(plan, ["bind", str(ROOT / "homes/env01"), f"{LAYOUT.stage}/own0"])
    assert staged < homes_covered < own_home_back


def test_only_the_environments_own_display_socket_is_put_in_the_private_tmp() -> None:
    plan = mount_plan(LAYOUT)
    sockets = [s for s in plan if s[0] == "bind" and s[-1].startswith("/tmp/.X11-unix/")]
    assert sockets == [["bind", f"{LAYOUT.stage}/x11", "/tmp/.X11-unix/X123"]]
    assert _index(plan, ["tmpfs", "/tmp", "1777"]) < plan.index(sockets[0])
    assert plan[-1] == ["detach", str(LAYOUT.stage)]


def test_a_stage_inside_a_covered_folder_is_refused() -> None:
    with pytest.raises(ValueError, match="stage"):
        mount_plan(SandboxLayout(LAYOUT.writable, (ROOT,), 1, stage=ROOT / "stage"))


def test_entering_drops_to_the_user_with_no_extra_groups_in_every_namespace() -> None:
    argv = entry_command(42, ["xterm"], 1001, 1002, "/home/x")
    assert argv[:2] == ["nsenter", "--target=42"]
    assert {"--ipc", "--pid", "--net", "--mount", "--uts"} <= set(argv)
    assert argv[-5:] == ["--reuid=1001", "--regid=1002", "--clear-groups", "--", "xterm"]


def test_entering_loads_the_system_call_filter_as_root_before_dropping_to_the_user() -> None:
    argv = entry_command(42, ["xterm"], 1001, 1002, "/home/x")
    launcher = argv.index(syscall_filter.SYSTEM_PYTHON)
    assert argv[launcher + 3] == syscall_filter.LAUNCHER
    assert launcher < argv.index("setpriv")
    # A leaky setup's sandbox without it.
    plain = entry_command(42, ["xterm"], 1001, 1002, "/home/x", filtered=False)
    assert syscall_filter.SYSTEM_PYTHON not in plain and "setpriv" in plain


@pytest.mark.parametrize(
    ("url", "port"),
    [
        ("http://127.0.0.1:8787/v1/form/x", 8787),
        ("http://localhost/", 80),
        ("https://127.0.0.1/", 443),
        ("http://example.com:8787/", None),
        ("about:blank", None),
        ("http://127.0.0.1:99999/", None),
    ],
)
def test_only_host_loopback_urls_get_a_forwarded_port(url: str, port: int | None) -> None:
    assert loopback_port(url) == port


def test_environment_keys_differ_per_environment_and_from_the_harness_key() -> None:
    keys = {env_key("k", e) for e in ("env00", "env01", "env02")}
    assert len(keys) == 3 and "k" not in keys
    assert env_key("k", "env01") == env_key("k", "env01")
    assert env_key("other", "env01") != env_key("k", "env01")
