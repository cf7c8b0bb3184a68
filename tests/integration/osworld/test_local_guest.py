"""The local guest: real subprocesses as a Unix user, in that user's home."""

from __future__ import annotations

import os
import pwd
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from cleanroom.guests import (
    DESKTOP_SKELETON,
    CommandNotStarted,
    GuestTimeout,
    UnknownGuestKind,
    open_guest,
)
from cleanroom.guests.local import LocalGuest
from cleanroom.lifecycle import wait_until


def test_commands_start_in_the_home_with_a_login_environment(home: Path) -> None:
    with open_guest("local", home=str(home)) as guest:
        result = guest.exec('pwd; echo "$HOME"; echo ~; echo "$LOGNAME"', shell=True, timeout=10)
    lines = result.stdout.decode().splitlines()
    assert lines[:3] == [str(home)] * 3 and lines[3] == "root"


def test_a_new_home_gets_the_desktop_skeleton(home: Path) -> None:
    with open_guest("local", home=str(home)):
        assert sorted(p.name for p in home.iterdir()) == sorted(DESKTOP_SKELETON)


def test_relative_paths_resolve_against_the_home(home: Path) -> None:
    with open_guest("local", home=str(home)) as guest:
        guest.write_file("Documents/notes.txt", b"hello\n")
        assert guest.exec("cat Documents/notes.txt", shell=False, timeout=10).stdout == b"hello\n"
        assert guest.read_file("~/Documents/notes.txt") == b"hello\n"


def test_reading_a_missing_file_raises_file_not_found(home: Path) -> None:
    with open_guest("local", home=str(home)) as guest, pytest.raises(FileNotFoundError):
        guest.read_file("Desktop/absent.txt")


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (os.mkfifo, "a fifo"),
        (os.mkdir, "a directory"),
        (lambda path: os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 5)), "a character device"),
        # A link the environment left is not followed, wherever it points.
        (lambda path: os.symlink("/dev/zero", path), "a link, not followed"),
        (lambda path: os.symlink("/etc/hostname", path), "a link, not followed"),
    ],
)
def test_what_is_no_regular_file_reads_as_missing_and_never_blocks(
    home: Path, make: Any, kind: str
) -> None:
    with open_guest("local", home=str(home)) as guest:
        make(home / "Desktop" / "x")
        with pytest.raises(FileNotFoundError, match=kind):
            guest.read_file("Desktop/x")


def test_exit_code_and_stderr_are_reported_as_they_are(home: Path) -> None:
    with open_guest("local", home=str(home)) as guest:
        result = guest.exec("echo oops >&2; exit 3", shell=True, timeout=10)
    assert (result.exit_code, result.stdout, result.stderr) == (3, b"", b"oops\n")


def test_a_missing_program_is_command_not_started(home: Path) -> None:
    with open_guest("local", home=str(home)) as guest, pytest.raises(CommandNotStarted):
        guest.exec(["no-such-program-here"], shell=False, timeout=10)


def test_timeout_kills_the_whole_process_group(home: Path) -> None:
    with open_guest("local", home=str(home)) as guest:
        started = time.monotonic()
        with pytest.raises(GuestTimeout):
            guest.exec("sleep 30 & echo $! > child.pid; wait", shell=True, timeout=1)
        assert time.monotonic() - started < 10
        child = int((home / "child.pid").read_text())
    assert wait_until(lambda: _gone_or_zombie(child), 5)


def test_output_past_the_cap_is_dropped_and_never_blocks_the_command(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a command prints in an environment is the agent's to make as large as it likes.
    from cleanroom.guests import local

    monkeypatch.setattr(local, "OUTPUT_CAP_BYTES", 1000)
    with open_guest("local", home=str(home)) as guest:
        result = guest.exec(
            "head -c 5000000 /dev/zero; head -c 3000000 /dev/zero >&2; echo done >&2; exit 3",
            shell=True,
            timeout=30,
        )
    assert (len(result.stdout), len(result.stderr), result.exit_code) == (1000, 1000, 3)


def test_spawn_returns_at_once_and_the_program_runs(home: Path) -> None:
    with open_guest("local", home=str(home)) as guest:
        started = time.monotonic()
        guest.spawn("sleep 0.3; touch launched", shell=True)
        assert time.monotonic() - started < 0.3
        assert wait_until((home / "launched").exists, 10)


def test_fresh_copies_an_explicit_home_and_removes_it_on_close(home: Path) -> None:
    with open_guest("local", home=str(home)) as template:
        template.write_file("Desktop/seed.txt", b"seed")
        fresh = template.fresh()
        assert fresh.home != template.home
        assert fresh.read_file("Desktop/seed.txt") == b"seed"
        fresh.write_file("Desktop/new.txt", b"x")
        fresh.close()
    assert not os.path.exists(fresh.home)
    assert not (home / "Desktop" / "new.txt").exists()


def test_fresh_without_explicit_home_has_only_the_skeleton() -> None:
    with LocalGuest().fresh() as fresh:
        assert sorted(os.listdir(fresh.home)) == sorted(DESKTOP_SKELETON)


def test_commands_run_as_the_chosen_user_who_owns_the_new_home(desktop_user: str) -> None:
    with open_guest("local", user=desktop_user) as guest:
        home = Path(guest.home)
        result = guest.exec(["id", "-un"], shell=False, timeout=10)
        guest.write_file("Desktop/mine.txt", b"x")
    assert result.stdout == f"{desktop_user}\n".encode()
    uid = pwd.getpwnam(desktop_user).pw_uid
    assert {(home / p).stat().st_uid for p in ["Desktop", "Documents", "Desktop/mine.txt"]} == {uid}


def test_an_unknown_guest_kind_is_a_clear_error() -> None:
    with pytest.raises(UnknownGuestKind, match="known kinds: local, docker:<container>"):
        open_guest("vmware:x")


def _gone_or_zombie(pid: int) -> bool:
    """Whether ``pid`` has exited (gone, or a zombie waiting for its parent)."""
    try:
        return "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
