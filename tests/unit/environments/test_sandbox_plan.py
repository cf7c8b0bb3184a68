"""The sandbox's spec: what it keeps, what it covers, in which order, and its limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.environments.policy.http import env_key
from cleanroom.environments.session import syscall_filter
from cleanroom.environments.session.cgroups import sandbox_cgroup
from cleanroom.environments.session.port_forward import loopback_port
from cleanroom.environments.session.sandbox_spec import (
    DISPLAY_NAMESPACES,
    ROOT_CAPABILITIES,
    SandboxLayout,
    SandboxLimits,
    SandboxProtections,
    process_config,
    runtime_config,
)

ROOT = Path("/var/lib/cleanroom/pools/abc123")
LAYOUT = SandboxLayout(
    writable=(ROOT / "homes/env01", ROOT / "run/env01"),
    hidden=(ROOT / "homes", ROOT / "run"),
    display_number=123,
)


def _config(protections: SandboxProtections | None = None) -> dict:
    return runtime_config(
        root=Path("/stage/root"),
        hostname="h",
        layout=LAYOUT,
        protections=protections or SandboxProtections(),
        cgroup="cleanroom/x",
    )


def _destinations() -> list[str]:
    return [m["destination"] for m in _config()["mounts"]]


def test_the_root_is_read_only_and_the_own_places_are_bound_writable() -> None:
    config = _config()
    assert config["root"] == {"path": "/stage/root", "readonly": True}
    binds = {m["destination"]: m["options"] for m in config["mounts"] if m["type"] == "bind"}
    for own in LAYOUT.writable:
        assert "rw" in binds[str(own)]
    assert set(binds) == {*map(str, LAYOUT.writable), "/tmp/.X11-unix/X123"}


def test_other_environments_folders_are_covered_before_the_own_ones_go_back() -> None:
    order = _destinations()
    assert order.index(str(ROOT / "homes")) < order.index(str(ROOT / "homes/env01"))
    assert order.index(str(ROOT / "run")) < order.index(str(ROOT / "run/env01"))
    # The display socket goes into the private /tmp after it is mounted.
    assert order.index("/tmp") < order.index("/tmp/.X11-unix/X123")


def test_private_places_are_sized_tmpfs_mounts_and_unsized_without_limits() -> None:
    limits = SandboxLimits(tmpfs_mib=64)
    tmpfs = {
        m["destination"]: m["options"]
        for m in _config(SandboxProtections(limits=limits))["mounts"]
        if m["type"] == "tmpfs"
    }
    for place in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
        assert "size=64m" in tmpfs[place] and "mode=1777" in tmpfs[place]
    unlimited = _config(SandboxProtections(limits=None))["mounts"]
    assert not any("size=64m" in m.get("options", []) for m in unlimited)


def test_the_sandbox_has_its_own_kernel_file_systems_and_device_nodes() -> None:
    kinds = {m["destination"]: m["type"] for m in _config()["mounts"]}
    assert kinds["/proc"] == "proc" and kinds["/sys"] == "sysfs"
    assert kinds["/dev"] == "tmpfs" and kinds["/dev/pts"] == "devpts"
    devices = _config()["linux"]["devices"]
    assert {d["path"] for d in devices} >= {"/dev/null", "/dev/urandom", "/dev/tty"}
    rules = _config()["linux"]["resources"]["devices"]
    assert rules[0] == {"allow": False, "access": "rwm"}  # every other device refused


def test_the_filter_and_the_limits_are_in_the_spec_unless_a_leaky_setup_removes_them() -> None:
    config = _config(SandboxProtections(limits=SandboxLimits(memory_mib=100, pids=50)))
    linux = config["linux"]
    denied = linux["seccomp"]["syscalls"][0]
    assert set(denied["names"]) == set(syscall_filter.DENIED)
    assert denied["action"] == "SCMP_ACT_ERRNO" and denied["errnoRet"] == 1
    assert linux["resources"]["memory"] == {"limit": 100 << 20, "swap": 100 << 20}
    assert linux["resources"]["pids"] == {"limit": 50}
    assert "/proc/keys" in linux["maskedPaths"]
    bare = _config(SandboxProtections(syscall_filter=False, limits=None))["linux"]
    assert "seccomp" not in bare and "memory" not in bare["resources"]


def test_a_user_command_holds_no_capability_and_a_root_one_only_the_narrow_set() -> None:
    user = process_config(["xterm"], 1001, 1002, "/home/x", {"A": "1"})
    assert user["user"] == {"uid": 1001, "gid": 1002, "additionalGids": []}
    assert user["capabilities"]["effective"] == [] and user["capabilities"]["ambient"] == []
    assert user["capabilities"]["bounding"] == list(ROOT_CAPABILITIES)
    assert user["env"] == ["A=1"] and user["noNewPrivileges"] is False
    root = process_config(["id"], 0, 0, "/", {})
    assert root["capabilities"]["effective"] == list(ROOT_CAPABILITIES)
    assert "CAP_SYS_ADMIN" not in ROOT_CAPABILITIES and "CAP_MKNOD" not in ROOT_CAPABILITIES


def test_kernel_wide_lists_are_masked_and_each_leak_unmasks_only_its_own() -> None:
    assert {"/proc/locks", "/proc/sys/fs/aio-nr", "/proc/keys"} <= set(
        _config()["linux"]["maskedPaths"]
    )
    unmasked = _config(SandboxProtections(kernel_wide_masked=False))["linux"]["maskedPaths"]
    assert "/proc/locks" not in unmasked and "/proc/sys/fs/aio-nr" not in unmasked
    assert "/proc/keys" in unmasked
    unfiltered = _config(SandboxProtections(syscall_filter=False))["linux"]["maskedPaths"]
    assert "/proc/locks" in unfiltered
    assert "/proc/keys" not in unfiltered and "/proc/sys/fs/aio-nr" not in unfiltered


def test_aio_page_cache_questions_and_reaching_into_processes_are_denied() -> None:
    names = set(_config()["linux"]["seccomp"]["syscalls"][0]["names"])
    assert {"io_setup", "io_submit", "io_uring_setup", "mincore", "cachestat"} <= names
    assert {"pidfd_getfd", "ptrace", "process_vm_readv", "process_vm_writev"} <= names


def test_evicting_a_page_or_asking_for_one_without_waiting_is_denied_by_argument() -> None:
    rules = {
        r["names"][0]: r["args"][0]
        for r in _config()["linux"]["seccomp"]["syscalls"]
        if "args" in r
    }
    # posix_fadvise(fd, offset, len, POSIX_FADV_DONTNEED): the advice, low 32 bits only
    assert rules["fadvise64"] == {
        "index": 3, "value": 0xFFFF_FFFF, "valueTwo": 4, "op": "SCMP_CMP_MASKED_EQ"
    }  # fmt: skip
    assert rules["madvise"]["valueTwo"] == 21  # MADV_PAGEOUT
    assert rules["preadv2"] == {"index": 5, "value": 8, "valueTwo": 8, "op": "SCMP_CMP_MASKED_EQ"}


def test_the_pty_pool_is_bounded_by_the_limits_and_unbounded_without_them() -> None:
    def pts(protections: SandboxProtections) -> list[str]:
        (mount,) = [m for m in _config(protections)["mounts"] if m["destination"] == "/dev/pts"]
        return list(mount["options"])

    assert "max=7" in pts(SandboxProtections(limits=SandboxLimits(ptys=7)))
    assert "newinstance" in pts(SandboxProtections(limits=None))
    assert not any(o.startswith("max=") for o in pts(SandboxProtections(limits=None)))


@pytest.mark.parametrize("field", ["memory_mib", "pids", "tmpfs_mib", "ptys"])
def test_a_limit_below_one_is_refused(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SandboxLimits(**{field: 0})


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


def test_a_display_servers_sandbox_has_only_the_socket_folder_writable_and_no_home() -> None:
    # What `XvfbDisplay` asks for: the pool's homes and runtime folders covered, none
    # bound back; the control fonts read-only; the socket folder the only writable place.
    layout = SandboxLayout(
        writable=(Path("/tmp/.X11-unix"),),
        hidden=LAYOUT.hidden,
        display_number=None,
        readable=(Path("/run/cleanroom/x11/control-fonts"),),
    )
    config = runtime_config(
        root=Path("/stage/root"),
        hostname="h",
        layout=layout,
        protections=SandboxProtections(),
        cgroup=sandbox_cgroup("x"),
        namespaces=DISPLAY_NAMESPACES,
    )
    # Its own mounts, IPC, network and name, but the host's PIDs: X-Resource names each
    # client by the pid the server sees, and the harness reads whose window is whose.
    kinds = {n["type"] for n in config["linux"]["namespaces"]}
    assert kinds == {"mount", "ipc", "network", "uts"}
    binds = {m["destination"]: m["options"] for m in config["mounts"] if m["type"] == "bind"}
    assert binds.keys() == {"/tmp/.X11-unix", "/run/cleanroom/x11/control-fonts"}
    assert "rw" in binds["/tmp/.X11-unix"] and "ro" in binds["/run/cleanroom/x11/control-fonts"]
    covered = {m["destination"] for m in config["mounts"] if m["type"] == "tmpfs"}
    assert {str(h) for h in LAYOUT.hidden} <= covered
    # Beside every other sandbox, in the environments' group, never in the harness's.
    assert config["linux"]["cgroupsPath"] == "/cleanroom/x"
