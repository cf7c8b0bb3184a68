"""Unix accounts for environments: a user, a home restored from a template, and removal.

Every environment runs its programs as its own user with a 0700 home, so nothing one
environment writes can be read by another. The pool creates the users and removes them
(with their homes) when it stops.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cleanroom.environments.errors import StartError
from cleanroom.environments.session.keyrings import clear_keyrings

# No environment user has a password (each account is locked), so ``su`` to another
# environment's user cannot succeed; OSWorld's ``echo password | sudo -S`` still works,
# because the sudo rule below asks for none.
# Setup steps of OSWorld tasks call ``sudo -S mkdir``; an environment user may run only
# that as root, and in its sandbox root can write nowhere but the environment's own places.
_SUDO_COMMANDS = "/usr/bin/mkdir, /bin/mkdir"


@dataclass(frozen=True)
class Account:
    """A pool-created Unix user and the home it works in."""

    user: str
    uid: int
    gid: int
    home: Path
    # Borrowed from another environment (a leaky setup): the user belongs to the lender,
    # so removing this account removes only its home.
    borrowed: bool = False

    def lend(self, home: Path) -> Account:
        """The same Unix user working in ``home``, for an environment that borrows it."""
        return Account(self.user, self.uid, self.gid, home, borrowed=True)

    @classmethod
    def create(cls, user: str, home: Path) -> Account:
        """Create the user (no home yet); fails if the name is taken."""
        if os.geteuid() != 0:
            raise StartError("creating environment users needs root")
        try:
            pwd.getpwnam(user)
        except KeyError:
            pass
        else:
            raise StartError(f"a user named {user} already exists; refusing to reuse it")
        _run(["useradd", "-M", "-U", "-d", str(home), "-s", "/bin/bash", user])
        try:
            _run(["usermod", "--lock", user])
            sudoers = _sudoers_file(user)
            sudoers.write_text(f"{user} ALL=(root) NOPASSWD: {_SUDO_COMMANDS}\n")
            sudoers.chmod(0o440)
        except BaseException:
            subprocess.run(["userdel", user], capture_output=True, check=False)
            raise
        entry = pwd.getpwnam(user)
        # The uid may have been another user's: whatever keys it left go first.
        why = clear_keyrings(entry.pw_uid, entry.pw_gid)
        if why is not None:
            subprocess.run(["userdel", user], capture_output=True, check=False)
            raise StartError(f"{user}: {why}")
        return cls(user, entry.pw_uid, entry.pw_gid, home)

    def restore_home(self, template: Path) -> None:
        """Make the home a fresh copy of ``template``, owned by the user, mode 0700.

        The folder itself is kept and only its contents replaced: the environment's
        sandbox has it mounted, and a mount follows the folder, not its path.
        """
        if self.home.is_dir() and not self.home.is_symlink():
            children = [str(child) for child in self.home.iterdir()]
            if children:  # rm, not rmtree: a tree deeper than Python's recursion is fine
                subprocess.run(["rm", "-rf", "--", *children], check=True, capture_output=True)
        else:
            if self.home.is_symlink() or self.home.exists():
                self.home.unlink()
            self.home.mkdir(parents=True)
        shutil.copytree(template, self.home, symlinks=True, dirs_exist_ok=True)
        chown_tree(self.home, self.uid, self.gid)
        self.home.chmod(0o700)

    def bound_home(self, size_mib: int) -> None:
        """Make the home a tmpfs of its own of ``size_mib`` (owned by the user, mode 0700),
        before it is filled: what the environment writes there counts against its own
        memory limit, and a full home fills no other file system (the run folders', the
        other homes')."""
        self.home.mkdir(parents=True, exist_ok=True)
        own_tmpfs(self.home, size_mib, self.uid, self.gid)

    def empty_home(self) -> None:
        """Make the home an empty folder owned by the user, mode 0700 (filled later)."""
        self.home.mkdir(parents=True, exist_ok=True)
        os.chown(self.home, self.uid, self.gid)
        self.home.chmod(0o700)

    def remove(self) -> None:
        """Delete the user, its group, its sudo rule, its home and its kernel keys."""
        if self.borrowed:
            remove_own_folder(self.home)
            return
        _sudoers_file(self.user).unlink(missing_ok=True)
        clear_keyrings(self.uid, self.gid)  # best effort: the next holder's create clears too
        subprocess.run(["userdel", self.user], capture_output=True, check=False)
        remove_own_folder(self.home)


def own_tmpfs(folder: Path, size_mib: int, uid: int, gid: int) -> None:
    """Mount a tmpfs of ``size_mib`` on ``folder`` (owned by ``uid``:``gid``, mode 0700),
    unless one is there already."""
    if os.path.ismount(folder):
        return
    options = f"size={size_mib}m,mode=0700,uid={uid},gid={gid},nosuid,nodev"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise StartError(f"cannot give {folder} a file system of its own: {done.stderr.strip()}")


def remove_own_folder(folder: Path) -> None:
    """Delete a home or runtime folder, its own file system first (lazily: a sandbox may
    still hold it)."""
    if os.path.ismount(folder):
        subprocess.run(["umount", "--lazy", str(folder)], capture_output=True, check=False)
    shutil.rmtree(folder, ignore_errors=True)


def unmount_beneath(root: Path) -> list[str]:
    """Lazily unmount every file system mounted below ``root`` (a dead pool's homes),
    deepest first; return their mount points."""
    prefix = str(root).rstrip("/") + "/"
    points = []
    try:
        with open("/proc/self/mountinfo") as info:
            for line in info:
                point = line.split()[4].encode().decode("unicode_escape")
                if point.startswith(prefix):
                    points.append(point)
    except OSError:
        return []
    for point in sorted(set(points), key=len, reverse=True):
        subprocess.run(["umount", "--lazy", point], capture_output=True, check=False)
    return points


def _sudoers_file(user: str) -> Path:
    return Path("/etc/sudoers.d") / f"cleanroom-{user}"


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Give a whole tree to one user, never following symlinks."""
    os.chown(root, uid, gid, follow_symlinks=False)
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            os.chown(os.path.join(top, name), uid, gid, follow_symlinks=False)


def _run(argv: list[str], stdin: str | None = None) -> None:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise StartError(f"{argv[0]} failed ({proc.returncode}): {proc.stderr.strip()}")
