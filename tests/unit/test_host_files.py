"""Reading files on the host that an agent may have replaced: no FIFO blocks, no device is
opened, no read goes past its cap, and `read_capped` never follows a link."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from cleanroom.host_files import (
    FileKind,
    NotARegularFile,
    make_folders_beneath,
    read_beneath,
    read_capped,
    read_regular,
    stat_beneath,
    write_beneath,
)

SHOWN = "/logs/verifier/reward.txt"
CAP = 64 * 1024


def test_a_regular_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "reward.txt").write_bytes(b"1\n")

    found = read_capped(tmp_path, "reward.txt", SHOWN, CAP)

    assert (found.kind, found.data, found.path) == (FileKind.REGULAR, b"1\n", SHOWN)


def test_a_missing_file_is_reported_missing(tmp_path: Path) -> None:
    assert read_capped(tmp_path, "reward.txt", SHOWN, CAP).kind is FileKind.MISSING


def test_a_symlink_is_reported_and_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("1")
    folder = tmp_path / "verifier"
    folder.mkdir()
    (folder / "reward.txt").symlink_to(outside)

    found = read_capped(folder, "reward.txt", SHOWN, CAP)

    assert (found.kind, found.data, found.note) == (FileKind.SYMLINK, b"", str(outside))


def test_a_fifo_is_reported_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "reward.txt")

    found = read_capped(tmp_path, "reward.txt", SHOWN, CAP)

    assert (found.kind, found.note) == (FileKind.OTHER, "fifo")


def test_a_directory_is_reported_as_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "reward.txt").mkdir()

    assert read_capped(tmp_path, "reward.txt", SHOWN, CAP).note == "directory"


def test_a_huge_sparse_file_costs_one_capped_read(tmp_path: Path) -> None:
    path = tmp_path / "reward.txt"
    path.write_bytes(b"1\n")
    os.truncate(path, 1 << 40)

    found = read_capped(tmp_path, "reward.txt", SHOWN, cap=16)

    assert (found.kind, found.size, len(found.data)) == (FileKind.OVERSIZE, 1 << 40, 16)
    assert found.data.startswith(b"1\n")


def test_a_symlinked_folder_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)

    with pytest.raises(OSError):
        read_capped(tmp_path / "link", "reward.txt", SHOWN, CAP)


@pytest.mark.parametrize("name", ["../reward.txt", "a/b", "", ".."])
def test_only_a_single_file_name_is_accepted(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError):
        read_capped(tmp_path, name, SHOWN, CAP)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_node_is_reported_and_never_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mknod(tmp_path / "reward.txt", 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero
    opened: list[str] = []
    real_open = os.open

    def watching_open(path: object, *args: object, **kwargs: object) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", watching_open)

    seen = read_capped(tmp_path, "reward.txt", "/logs/verifier/reward.txt", CAP)

    assert (seen.kind, seen.note) == (FileKind.OTHER, "character device")
    assert "reward.txt" not in opened


# read_regular: a file of an agent's home ---------------------------------------------


def test_a_regular_file_is_read_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "doc.txt").write_bytes(b"saved")
    (tmp_path / "link").symlink_to(tmp_path / "doc.txt")

    assert read_regular(tmp_path / "link") == b"saved"


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (os.mkfifo, "a fifo"),  # opened for reading, it would wait for a writer forever
        (os.mkdir, "a directory"),
        (lambda p: os.symlink("/dev/zero", p), "a character device"),  # endless, never opened
    ],
)
def test_anything_but_a_regular_file_is_refused_without_being_opened(
    tmp_path: Path, make: Callable[[Path], None], kind: str
) -> None:
    make(tmp_path / "x")

    with pytest.raises(NotARegularFile, match=kind):
        read_regular(tmp_path / "x")


def test_a_file_over_the_cap_is_refused_and_a_missing_one_is_missing(tmp_path: Path) -> None:
    with (tmp_path / "huge").open("wb") as fh:
        fh.truncate(10 << 20)  # sparse: costs no disk

    with pytest.raises(NotARegularFile, match="over 1 MiB"):
        read_regular(tmp_path / "huge", cap=1 << 20)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "absent")


def _home_with_foreign(tmp_path: Path) -> tuple[Path, Path]:
    home, other = tmp_path / "env01", tmp_path / "env02"
    (home / "Documents").mkdir(parents=True)
    other.mkdir()
    (other / "secret.odt").write_bytes(b"env02's own document")
    return home, other


def test_read_beneath_reads_a_regular_file_of_the_folder(tmp_path: Path) -> None:
    home, _ = _home_with_foreign(tmp_path)
    (home / "Documents" / "report.odt").write_bytes(b"mine")

    assert read_beneath(home, home / "Documents" / "report.odt") == b"mine"


def test_read_beneath_follows_no_link_in_the_files_place(tmp_path: Path) -> None:
    home, other = _home_with_foreign(tmp_path)
    (home / "Documents" / "report.odt").symlink_to(other / "secret.odt")

    with pytest.raises(FileNotFoundError):
        read_beneath(home, home / "Documents" / "report.odt")
    # The control: a reader that follows links reads the other environment's file.
    assert read_regular(home / "Documents" / "report.odt") == b"env02's own document"


def test_read_beneath_follows_no_link_in_a_folders_place(tmp_path: Path) -> None:
    home, other = _home_with_foreign(tmp_path)
    (home / "Documents").rmdir()
    (home / "Documents").symlink_to(other)
    (other / "report.odt").write_bytes(b"env02's")

    with pytest.raises(FileNotFoundError):
        read_beneath(home, home / "Documents" / "report.odt")


def test_read_beneath_never_opens_a_fifo_or_a_device(tmp_path: Path) -> None:
    home, _ = _home_with_foreign(tmp_path)
    os.mkfifo(home / "Documents" / "report.odt")  # no writer: an open would wait

    with pytest.raises(NotARegularFile):
        read_beneath(home, home / "Documents" / "report.odt")
    if os.geteuid() == 0:
        os.mknod(home / "dev", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        with pytest.raises(NotARegularFile):
            read_beneath(home, home / "dev")


def test_read_beneath_refuses_a_path_outside_the_folder(tmp_path: Path) -> None:
    home, other = _home_with_foreign(tmp_path)

    with pytest.raises(ValueError):
        read_beneath(home, other / "secret.odt")
    with pytest.raises(ValueError):
        read_beneath(home, home / ".." / "env02" / "secret.odt")


def test_read_beneath_refuses_a_file_over_its_cap(tmp_path: Path) -> None:
    home, _ = _home_with_foreign(tmp_path)
    (home / "big").write_bytes(b"x" * 100)

    with pytest.raises(NotARegularFile):
        read_beneath(home, home / "big", cap=10)


def test_stat_beneath_looks_at_a_link_itself_and_never_through_a_linked_folder(
    tmp_path: Path,
) -> None:
    root = tmp_path / "home"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.txt").write_bytes(b"abc")
    (root / "link").symlink_to("/etc/passwd")
    (root / "via").symlink_to(root / "docs")
    seen = stat_beneath(root, root / "docs" / "a.txt")
    assert seen is not None and stat.S_ISREG(seen.st_mode) and seen.st_size == 3
    link = stat_beneath(root, root / "link")
    assert link is not None and stat.S_ISLNK(link.st_mode)
    assert stat_beneath(root, root / "via" / "a.txt") is None  # a linked folder on the way
    assert stat_beneath(root, root / "missing") is None


def test_stat_beneath_never_opens_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    seen = stat_beneath(tmp_path, tmp_path / "pipe")  # would block if it were opened
    assert seen is not None and stat.S_ISFIFO(seen.st_mode)


def test_write_beneath_replaces_a_link_and_never_writes_through_it(tmp_path: Path) -> None:
    root, outside = tmp_path / "home", tmp_path / "outside.txt"
    root.mkdir()
    outside.write_bytes(b"keep")
    (root / "plant.txt").symlink_to(outside)
    write_beneath(root, root / "plant.txt", b"planted", os.getuid(), os.getgid())
    assert outside.read_bytes() == b"keep"
    assert not (root / "plant.txt").is_symlink()
    assert (root / "plant.txt").read_bytes() == b"planted"
    assert stat.S_IMODE((root / "plant.txt").stat().st_mode) == 0o600


def test_write_beneath_refuses_a_linked_folder_on_the_way(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "docs").symlink_to(elsewhere)
    with pytest.raises(FileNotFoundError):
        write_beneath(root, root / "docs" / "x.txt", b"x", os.getuid(), os.getgid())
    assert list(elsewhere.iterdir()) == []


def test_make_folders_beneath_makes_the_missing_folders_of_a_path(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    make_folders_beneath(tmp_path, tmp_path / "a" / "b" / "c" / "file.txt")
    assert (tmp_path / "a/b/c").is_dir() and not (tmp_path / "a/b/c/file.txt").exists()


def test_make_folders_beneath_refuses_a_link_in_a_folders_place(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "mirror", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "a").symlink_to(elsewhere)
    with pytest.raises(FileExistsError):
        make_folders_beneath(root, root / "a" / "b" / "file.txt")
    assert list(elsewhere.iterdir()) == []
