"""A remote listing and archive made real on the host: nothing followed, nothing escapes,
every kind as the readers expect it, times never later than they were."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from cleanroom.core.observed_file import FileKind
from cleanroom.host_files import read_capped
from cleanroom.verifiers.container.runtime.remote_files import (
    MAX_ENTRIES,
    BundleError,
    Clock,
    Record,
    materialize,
    parse_records,
    unbundle,
)

CAP = 64


def record(kind: str, name: str, *, size: int = 0, target: str = "", mtime_ns: int = 0) -> Record:
    return Record(kind, 0o644, size, mtime_ns, target, name)


def archive(tmp_path: Path, files: dict[str, bytes]) -> Path:
    path = tmp_path / "files.tar"
    with tarfile.open(path, "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def out(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def test_records_are_read_and_a_cut_or_malformed_one_is_left_out() -> None:
    data = b"f\x00644\x003\x001700000000.5\x00\x00reward.txt\x00"
    data += b"l\x00777\x000\x00x\x00/etc\x00bad-time\x00"  # not a time find writes
    data += b"d\x00755\x00"  # cut
    (only,) = parse_records(data)
    assert only == Record("f", 0o644, 3, 1_700_000_000_500_000_000, "", "reward.txt")


def test_names_that_are_not_utf8_survive() -> None:
    data = b"f\x00644\x000\x001\x00\x00caf\xe9\x00"
    (only,) = parse_records(data)
    assert os.fsencode(only.name) == b"caf\xe9"


def test_a_listing_is_cut_at_its_entry_cap() -> None:
    one = b"f\x00644\x000\x001\x00\x00x\x00"
    assert len(parse_records(one * (MAX_ENTRIES + 5))) == MAX_ENTRIES


def test_each_kind_is_made_as_such_and_read_as_it_would_be_through_a_bind(
    tmp_path: Path, out: Path
) -> None:
    records = [
        record("f", "reward.txt", size=2),
        record("f", "big.txt", size=10 * CAP),
        record("l", "link.txt", target="/etc/passwd"),
        record("p", "fifo.txt"),
        record("s", "socket.txt"),
        record("c", "device.txt"),
        record("d", "sub"),
        record("f", "sub/inner.txt", size=1),
    ]
    files = archive(tmp_path, {"reward.txt": b"1\n", "sub/inner.txt": b"x"})
    materialize(out, records, files, CAP, None)

    assert read_capped(out, "reward.txt", "/r", CAP).data == b"1\n"
    assert read_capped(out, "big.txt", "/r", CAP).kind is FileKind.OVERSIZE
    assert (out / "big.txt").stat().st_blocks == 0  # sparse: its size alone
    assert os.readlink(out / "link.txt") == "/etc/passwd"
    assert read_capped(out, "link.txt", "/r", CAP).kind is FileKind.SYMLINK
    assert stat.S_ISFIFO(os.lstat(out / "fifo.txt").st_mode)
    assert stat.S_ISSOCK(os.lstat(out / "socket.txt").st_mode)
    device = os.lstat(out / "device.txt")
    assert stat.S_ISCHR(device.st_mode) and device.st_rdev == os.makedev(1, 3)
    assert (out / "sub" / "inner.txt").read_bytes() == b"x"


def test_names_that_climb_are_left_out_and_nothing_is_written_through_a_link(
    tmp_path: Path, out: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    records = [
        record("f", "../outside/escaped.txt", size=1),
        record("f", "a//b", size=1),
        record("l", "via", target=str(outside)),
        record("f", "via/through.txt", size=1),
        record("l", "reward.txt", target=str(outside / "victim.txt")),
    ]
    files = archive(
        tmp_path, {"../outside/escaped.txt": b"x", "via/through.txt": b"x", "reward.txt": b"1"}
    )
    materialize(out, records, files, CAP, None)

    assert list(outside.iterdir()) == []
    assert sorted(os.listdir(out)) == ["reward.txt", "via"]
    assert os.path.islink(out / "reward.txt")


def test_a_file_the_listing_does_not_name_is_not_written(tmp_path: Path, out: Path) -> None:
    files = archive(tmp_path, {"extra.txt": b"x", "reward.txt": b"1"})
    materialize(out, [record("f", "reward.txt", size=1)], files, CAP, None)
    assert os.listdir(out) == ["reward.txt"]


def test_the_folder_is_emptied_first(tmp_path: Path, out: Path) -> None:
    (out / "stale.txt").write_text("1")
    (out / "stale").mkdir()
    materialize(out, [], None, CAP, None)
    assert os.listdir(out) == []


def test_times_are_put_on_the_hosts_clock_never_later_than_they_were(
    tmp_path: Path, out: Path
) -> None:
    # The remote clock is between 5 and 7 s ahead of the host's.
    clock = Clock(low_ns=5_000_000_000, high_ns=7_000_000_000)
    written = 1_700_000_010_000_000_000
    materialize(out, [record("f", "reward.txt", size=0, mtime_ns=written)], None, CAP, clock)
    assert os.lstat(out / "reward.txt").st_mtime_ns == written - 7_000_000_000
    assert clock.earliest_host_ns(written) <= written - clock.low_ns


def test_without_a_clock_a_time_is_the_earliest_there_is(out: Path) -> None:
    materialize(
        out, [record("f", "reward.txt", mtime_ns=1_700_000_000_000_000_000)], None, CAP, None
    )
    assert os.lstat(out / "reward.txt").st_mtime_ns == 0


def test_an_archive_cut_at_its_cap_gives_the_files_it_holds_whole(
    tmp_path: Path, out: Path
) -> None:
    files = archive(tmp_path, {"reward.txt": b"1\n", "log.txt": b"x" * 50_000})
    cut = tmp_path / "cut.tar"
    cut.write_bytes(files.read_bytes()[:20_000])  # inside log.txt's data
    records = [record("f", "reward.txt", size=2), record("f", "log.txt", size=50_000)]
    materialize(out, records, cut, 1 << 20, None)
    assert (out / "reward.txt").read_bytes() == b"1\n"
    assert (out / "log.txt").read_bytes() == b""  # cut: its content never came


def bundle(tmp_path: Path, items: list[tuple[bytes, bytes]], header: bytes | None = None) -> Path:
    """A bundle as the environment writes it: the header, then each listing and archive."""
    sizes = b"".join(b"%d %d\n" % (len(listing), len(arch)) for listing, arch in items)
    head = header if header is not None else b"cleanroom-bundle %d\n" % len(items)
    path = tmp_path / "bundle"
    path.write_bytes(head + sizes + b"".join(listing + arch for listing, arch in items))
    return path


def test_a_bundle_gives_each_listing_and_archive_back(tmp_path: Path) -> None:
    made = bundle(tmp_path, [(b"f\0list one\0", b"archive one"), (b"", b"two")])
    got = unbundle(made, 2, tmp_path, 100, 100)
    assert [(listing, arch.read_bytes()) for listing, arch in got] == [
        (b"f\0list one\0", b"archive one"),
        (b"", b"two"),
    ]


def test_an_archive_past_its_cap_is_cut_and_the_next_item_still_read(tmp_path: Path) -> None:
    made = bundle(tmp_path, [(b"l1", b"x" * 50), (b"l2", b"y" * 5)])
    first, second = unbundle(made, 2, tmp_path, 100, 10)
    assert first[1].read_bytes() == b"x" * 10
    assert second[0] == b"l2"
    assert second[1].read_bytes() == b"y" * 5


def test_a_bundle_cut_in_its_last_archive_gives_what_came(tmp_path: Path) -> None:
    made = bundle(tmp_path, [(b"l1", b"x" * 50)])
    made.write_bytes(made.read_bytes()[:-20])
    [(listing, arch)] = unbundle(made, 1, tmp_path, 100, 100)
    assert (listing, arch.read_bytes()) == (b"l1", b"x" * 30)


def test_a_listing_past_its_cap_is_no_bundle(tmp_path: Path) -> None:
    made = bundle(tmp_path, [(b"l" * 20, b"")])
    with pytest.raises(BundleError, match="over its cap"):
        unbundle(made, 1, tmp_path, 10, 100)


def test_a_listing_cut_short_is_no_bundle(tmp_path: Path) -> None:
    made = bundle(tmp_path, [(b"l" * 20, b"")])
    made.write_bytes(made.read_bytes()[:-5])
    with pytest.raises(BundleError, match="cut short"):
        unbundle(made, 1, tmp_path, 100, 100)


@pytest.mark.parametrize(
    "header",
    [b"cleanroom-bundle 3\n", b"something else\n", b"cleanroom-bundle 1" + b" " * 100 + b"\n"],
)
def test_a_header_that_is_not_the_bundles_is_refused(tmp_path: Path, header: bytes) -> None:
    made = bundle(tmp_path, [(b"l", b"a")], header=header)
    with pytest.raises(BundleError, match="header"):
        unbundle(made, 1, tmp_path, 100, 100)


@pytest.mark.parametrize("line", [b"-1 2\n", b"1\n", b"1 2 3\n", b"9" * 80 + b" 1\n"])
def test_a_size_line_that_is_not_two_sizes_is_refused(tmp_path: Path, line: bytes) -> None:
    made = tmp_path / "bundle"
    made.write_bytes(b"cleanroom-bundle 1\n" + line + b"la")
    with pytest.raises(BundleError, match="size line"):
        unbundle(made, 1, tmp_path, 100, 100)
