"""Removing what a pool left behind when its owner died (a supervisor killed with SIGKILL).

A pool records itself on disk before it creates anything (`pool_record`). A record whose
owner process is gone marks an orphan: its users and every process they run, every
process whose command line names the pool's folder (its Xvfb displays, which run as
root with their cookie file there), its containers (found by label), its homes and
folder, the harness's cookie file, and the record itself are removed.

Users named like a pool's users but with no record at all (left by a version that kept
no records) are removed only when nothing runs as them and they are older than
`UNRECORDED_GRACE_S`, since a pool without a record cannot say whether its owner lives.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleanroom.docker_layer import Docker, DockerError
from cleanroom.environments.errors import PoolError
from cleanroom.environments.pool.pool_record import (
    RECORDS_DIR,
    PoolRecord,
    read_record,
    read_records,
    remove_record,
)
from cleanroom.environments.session.accounts import unmount_beneath
from cleanroom.environments.session.keyrings import clear_keyrings
from cleanroom.environments.session.processes import (
    alive,
    kill_pids,
    kill_uid,
    pids_of_uid,
    start_time,
)
from cleanroom.environments.session.sandbox import remove_sandboxes
from cleanroom.environments.x11.display import lock_file, remove_display_files
from cleanroom.lifecycle import wait_until

# An environment's user, and the user of its standby slot (``b``).
# An environment's user (``b``: its warm spare's) and its display server's (``d``).
USER_PATTERN = re.compile(r"^cr(?P<pool>[0-9a-f]{6})env\d{2}b?d?$")
POOL_FOLDER_PATTERN = re.compile(r"^[0-9a-f]{6}$")
UNRECORDED_GRACE_S = 600.0
_REAP_WAIT_S = 10.0


class PoolStillRunning(PoolError):
    """The pool's owner process is alive: stop it through the supervisor, not by removal."""


@dataclass
class Removed:
    """What was removed for one pool."""

    pool_id: str
    users: list[str] = field(default_factory=list)
    processes: list[int] = field(default_factory=list)
    displays: list[str] = field(default_factory=list)
    containers: list[str] = field(default_factory=list)
    sandboxes: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def anything(self) -> bool:
        """Whether anything at all was found and removed."""
        return bool(
            self.users or self.processes or self.containers or self.sandboxes or self.folders
        )

    def summary(self) -> str:
        """One line for people."""
        parts = [
            f"{len(self.users)} user(s)" + (f" ({', '.join(self.users)})" if self.users else ""),
            f"{len(self.processes)} process(es)",
            f"{len(self.displays)} display(s)"
            + (f" ({', '.join(self.displays)})" if self.displays else ""),
            f"{len(self.containers)} container(s)",
            f"{len(self.sandboxes)} sandbox(es)",
            f"{len(self.folders)} folder(s)",
        ]
        line = f"pool {self.pool_id}: removed " + ", ".join(parts)
        if self.problems:
            line += "; problems: " + "; ".join(self.problems)
        return line

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "pool_id": self.pool_id,
            "users": self.users,
            "processes": self.processes,
            "displays": self.displays,
            "containers": self.containers,
            "sandboxes": self.sandboxes,
            "folders": self.folders,
            "problems": self.problems,
        }


@dataclass
class Collection:
    """What one garbage collection removed, and what it left alone and why."""

    removed: list[Removed] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line for people per pool removed or left alone."""
        return [f"orphans: {r.summary()}" for r in self.removed] + [
            f"orphans: left alone: {note}" for note in self.left
        ]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"removed": [r.to_json() for r in self.removed], "left": self.left}


# -- one pool -----------------------------------------------------------------------------


def reap(record: PoolRecord, records_dir: Path = RECORDS_DIR) -> Removed:
    """Remove everything of a pool whose owner is dead; `PoolStillRunning` if it lives."""
    if record.owner_alive():
        raise PoolStillRunning(
            f"pool {record.pool_id} is owned by running process {record.owner_pid}; "
            "stop it with `cleanroom envs down`"
        )
    out = Removed(record.pool_id)
    out.containers = _remove_containers(record.pool_id, out.problems)
    # Every account of the pool is named cr<pool id>..., and so is each of its sandboxes.
    out.sandboxes = remove_sandboxes(f"cr{record.pool_id}")
    users = _existing_users(record)
    for user in users:
        uid = pwd.getpwnam(user).pw_uid
        pids = pids_of_uid(uid)
        if uid != 0 and pids:
            kill_uid(uid, grace_s=0.5)
            out.processes.extend(pids)
    pids, displays = _processes_naming(record.root)
    kill_pids(pids, grace_s=2.0)
    out.processes.extend(pids)
    # A sandboxed display's server is named by its sandbox (`XvfbDisplay`): cr...-x<n>-...
    displays += [int(m[1]) for n in out.sandboxes if (m := _DISPLAY_SANDBOX.search(n))]
    out.displays = [f":{n}" for n in displays]
    for number in displays:
        _remove_stale_display_files(number)
    for user in users:
        # A killed process whose parent died waits as a zombie until init reaps it.
        uid = pwd.getpwnam(user).pw_uid

        def none_left(uid: int = uid) -> bool:
            return not pids_of_uid(uid)

        wait_until(none_left, _REAP_WAIT_S)
        _remove_user(user, out.problems)
    out.users = users
    # Only a folder named for the pool is the pool's: never remove anything else.
    if record.root.name == record.pool_id and record.root.exists():
        unmount_beneath(record.root)  # the homes' own file systems
        shutil.rmtree(record.root, ignore_errors=True)
        out.folders.append(str(record.root))
    if record.harness_authority:
        with contextlib.suppress(FileNotFoundError):
            Path(record.harness_authority).unlink()
    _mark_run_stopped(record)
    remove_record(record.pool_id, records_dir)
    return out


def reap_run(run_dir: Path, records_dir: Path = RECORDS_DIR) -> Removed | None:
    """Remove what the pool of ``run_dir`` left if its supervisor is dead; None when the
    run folder names no pool. `PoolStillRunning` if the supervisor lives."""
    from cleanroom.environments.pool.supervisor import read_state

    state = read_state(run_dir)
    pool_id = state.get("pool_id")
    if not pool_id:
        return None
    record = read_record(str(pool_id), records_dir)
    if record is None:
        # No record left (or never written): what the run folder says is all there is.
        root = Path(state["root"]) if state.get("root") else None
        if root is None:
            return None
        record = PoolRecord(
            str(pool_id),
            root,
            run_dir,
            int(state.get("pid", 0)),
            None,
            tuple(dict(state.get("users") or {}).values()),
        )
        if alive(record.owner_pid) and _looks_like_supervisor(record.owner_pid):
            raise PoolStillRunning(f"the supervisor of {run_dir} (pid {record.owner_pid}) runs")
    return reap(record, records_dir)


# -- every pool ---------------------------------------------------------------------------


def collect_garbage(records_dir: Path = RECORDS_DIR, pools_root: Path | None = None) -> Collection:
    """Find and remove the orphans of every dead pool on this machine."""
    from cleanroom.environments.pool.plan import DEFAULT_ROOT

    pools_root = pools_root or DEFAULT_ROOT
    out = Collection()
    live: set[str] = set()
    for record in read_records(records_dir):
        if record.owner_alive():
            live.add(record.pool_id)
            continue
        out.removed.append(reap(record, records_dir))
    recorded = live | {r.pool_id for r in read_records(records_dir)}
    for pool_id, users in sorted(_unrecorded_users(recorded).items()):
        reason = _unrecorded_pool_busy(users)
        if reason:
            out.left.append(f"pool {pool_id} (no record): {reason}")
            continue
        root = Path(pwd.getpwnam(users[0]).pw_dir).parent.parent
        record = PoolRecord(pool_id, root, Path("/nonexistent"), 0, None, tuple(users))
        out.removed.append(reap(record, records_dir))
    stray = _stray_containers(live)
    if stray:
        removed = Removed("(containers of dead owners)")
        for pool_id in stray:
            removed.containers += _remove_containers(pool_id, removed.problems)
        out.removed.append(removed)
    for folder in _stray_pool_folders(pools_root, recorded):
        shutil.rmtree(folder, ignore_errors=True)
        out.removed.append(Removed(folder.name, folders=[str(folder)]))
    return out


# -- the parts ----------------------------------------------------------------------------


def _existing_users(record: PoolRecord) -> list[str]:
    names = set(record.users)
    names.update(
        e.pw_name
        for e in pwd.getpwall()
        if (m := USER_PATTERN.match(e.pw_name)) and m["pool"] == record.pool_id
    )
    out = []
    for name in sorted(names):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            out.append(name)
    return out


def _processes_naming(root: Path) -> tuple[list[int], list[int]]:
    """Processes whose command line names the pool's folder, and the display numbers of
    those that are X servers."""
    needle = str(root).rstrip("/") + "/"
    me = os.getpid()
    pids, displays = [], []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        args = [a.decode(errors="replace") for a in argv if a]
        if not any(needle in a or a == needle[:-1] for a in args):
            continue
        pids.append(int(entry.name))
        if args and Path(args[0]).name in ("Xvfb", "Xorg", "Xephyr"):
            displays += [int(a[1:]) for a in args[1:] if re.fullmatch(r":\d+", a)]
    return pids, displays


_DISPLAY_SANDBOX = re.compile(r"-x(\d+)-[0-9a-f]+\Z")


def _remove_stale_display_files(number: int) -> None:
    # An X server killed hard leaves its lock and socket; the next server to pick this
    # number would take it for a display in use.
    with contextlib.suppress(OSError, ValueError):
        if alive(int(lock_file(number).read_text().strip())):
            return
    remove_display_files(number)


def _remove_user(user: str, problems: list[str]) -> None:
    (Path("/etc/sudoers.d") / f"cleanroom-{user}").unlink(missing_ok=True)
    with contextlib.suppress(KeyError):
        entry = pwd.getpwnam(user)
        why = clear_keyrings(entry.pw_uid, entry.pw_gid)
        if why is not None:
            problems.append(why)
    proc = subprocess.run(["userdel", user], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        problems.append(f"userdel {user}: {proc.stderr.strip()}")


def _remove_containers(pool_id: str, problems: list[str]) -> list[str]:
    from cleanroom.environments.containers.program_container import POOL_LABEL

    client = _docker_or_none()
    if client is None:
        return []
    removed = []
    try:
        for c in client.containers_labelled(f"{POOL_LABEL}={pool_id}"):
            client.remove_container(c.id)
            removed.append(c.name)
    except DockerError as exc:  # report, go on
        problems.append(f"containers of pool {pool_id}: {exc}")
    finally:
        client.close()
    return removed


def _stray_containers(live: set[str]) -> list[str]:
    """Pool ids of labelled containers whose owner process is gone."""
    from cleanroom.environments.containers.program_container import OWNER_LABEL, POOL_LABEL

    client = _docker_or_none()
    if client is None:
        return []
    found = set()
    try:
        for c in client.containers_labelled(POOL_LABEL):
            labels = c.labels
            pool_id = labels.get(POOL_LABEL, "")
            if pool_id in live:
                continue
            pid, _, start = str(labels.get(OWNER_LABEL, "0:")).partition(":")
            owner_lives = pid.isdigit() and alive(int(pid)) and str(start_time(int(pid))) == start
            if not owner_lives:
                found.add(pool_id)
    finally:
        client.close()
    return sorted(found)


def _docker_or_none() -> Docker | None:
    # Only a pool in containers mode has containers; without a daemon there are none.
    if not Path("/var/run/docker.sock").exists() and "DOCKER_HOST" not in os.environ:
        return None
    try:
        return Docker.connect(60)
    except DockerError:
        return None


def _unrecorded_users(recorded: set[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for e in pwd.getpwall():
        m = USER_PATTERN.match(e.pw_name)
        if m and m["pool"] not in recorded:
            found.setdefault(m["pool"], []).append(e.pw_name)
    return found


def _unrecorded_pool_busy(users: list[str]) -> str | None:
    """Why an unrecorded pool must be left alone, or None if it may be removed."""
    for user in users:
        entry = pwd.getpwnam(user)
        if pids_of_uid(entry.pw_uid):
            return f"{user} has running processes"
        marker = Path("/etc/sudoers.d") / f"cleanroom-{user}"
        for path in (marker, Path(entry.pw_dir)):
            with contextlib.suppress(OSError):
                if time.time() - path.stat().st_mtime < UNRECORDED_GRACE_S:
                    return f"{user} is younger than {UNRECORDED_GRACE_S:g} s"
    return None


def _stray_pool_folders(pools_root: Path, recorded: set[str]) -> list[Path]:
    """Pool folders with no record and no user, untouched for the grace period."""
    if not pools_root.is_dir():
        return []
    users = {m["pool"] for e in pwd.getpwall() if (m := USER_PATTERN.match(e.pw_name))}
    out = []
    for folder in pools_root.iterdir():
        if not POOL_FOLDER_PATTERN.match(folder.name) or folder.name in recorded | users:
            continue
        with contextlib.suppress(OSError):
            if time.time() - folder.stat().st_mtime >= UNRECORDED_GRACE_S:
                out.append(folder)
    return out


def _looks_like_supervisor(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return (
            b"cleanroom.environments.pool.supervisor" in Path(f"/proc/{pid}/cmdline").read_bytes()
        )
    return False


def _mark_run_stopped(record: PoolRecord) -> None:
    """Tell the run folder its pool is gone (only if the folder still describes it)."""
    from cleanroom.environments.pool.supervisor import KEY_FILE, STATE_FILE

    path = record.run_dir / STATE_FILE
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if state.get("pool_id") != record.pool_id or state.get("state") in ("stopped", "failed"):
        return
    state.update(state="stopped", stopped_at=time.time(), removed_after_crash=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
    tmp.replace(path)
    (record.run_dir / KEY_FILE).unlink(missing_ok=True)
