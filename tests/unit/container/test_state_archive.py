"""The agent's state on its way to the verifier: devices dropped, names past PATH_MAX found."""

from __future__ import annotations

import io
import tarfile

import pytest

from cleanroom.verifiers.container.agent_state.state_archive import (
    PATH_MAX,
    ArchiveNotRooted,
    FrozenLink,
    StateArchiveError,
    copy_capped,
    files_named,
    rooted,
    scan,
    with_frozen,
    without_dropped,
)


def archive(*members: tarfile.TarInfo, data: bytes = b"x") -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            if member.isreg():
                member.size = len(data)
                tar.addfile(member, io.BytesIO(data))
            else:
                tar.addfile(member)
    buf.seek(0)
    return buf


def entry(name: str, kind: bytes = tarfile.REGTYPE, **attrs: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in attrs.items():
        setattr(info, key, value)
    return info


def names(buf: io.BytesIO) -> list[str]:
    buf.seek(0)
    with tarfile.open(fileobj=buf, mode="r") as tar:
        return tar.getnames()


def test_device_nodes_are_listed_and_left_out_everything_else_passes() -> None:
    src = archive(
        entry("app", tarfile.DIRTYPE),
        entry("app/stats.py"),
        entry("app/zero", tarfile.CHRTYPE, devmajor=1, devminor=5),
        entry("app/disk", tarfile.BLKTYPE, devmajor=8, devminor=0),
        entry("app/pipe", tarfile.FIFOTYPE),
        entry("app/py", tarfile.SYMTYPE, linkname="/usr/bin/python3"),
    )

    found = scan(src)
    out = io.BytesIO()
    src.seek(0)
    without_dropped(src, out)

    assert found.dropped == ["app/zero", "app/disk"]
    assert names(out) == ["app", "app/stats.py", "app/pipe", "app/py"]


def test_a_name_longer_than_path_max_is_found() -> None:
    deep = "app/" + "d/" * (PATH_MAX // 2) + "leaf"

    found = scan(archive(entry("app", tarfile.DIRTYPE), entry(deep)))

    assert found.too_long.startswith("app/d/d/")


def test_an_ordinary_tree_has_nothing_to_drop_or_refuse() -> None:
    found = scan(archive(entry("app", tarfile.DIRTYPE), entry("app/a.txt")))

    assert (found.members, found.dropped, found.too_long) == (2, [], "")


def test_bytes_that_are_not_a_tar_stream_are_an_error_not_a_crash() -> None:
    with pytest.raises(StateArchiveError):
        scan(io.BytesIO(b"\x00" * 100 + b"garbage" * 200))


def test_a_copy_past_its_cap_stops_and_says_so() -> None:
    out = io.BytesIO()

    assert copy_capped([b"a" * 10, b"b" * 10], out, 15) is None
    assert copy_capped([b"a" * 10], io.BytesIO(), 15) == 10


def test_a_name_that_is_not_utf8_is_scanned_and_carried_like_any_other() -> None:
    odd = b"app/bad\xff\x01name".decode("utf-8", "surrogateescape")
    src = archive(
        entry("app", tarfile.DIRTYPE),
        entry(odd),
        entry("app/zero", tarfile.CHRTYPE, devmajor=1, devminor=5),
    )

    found = scan(src)
    out = io.BytesIO()
    src.seek(0)
    without_dropped(src, out)

    assert (found.dropped, found.too_long) == (["app/zero"], "")
    assert names(out) == ["app", odd]


def test_podman_s_unrooted_names_are_given_the_path_s_own_name() -> None:
    # podman 4's archive of a paused container's volume: '' for the folder, '/x' beneath.
    got = io.BytesIO()
    rooted(archive(entry("", tarfile.DIRTYPE), entry("/a.txt"), entry("/sub/")), got, "artifacts")
    assert names(got) == ["artifacts", "artifacts/a.txt", "artifacts/sub"]


def test_an_archive_docker_names_passes_unchanged() -> None:
    got = io.BytesIO()
    rooted(archive(entry("app", tarfile.DIRTYPE), entry("app/x")), got, "app")
    assert names(got) == ["app", "app/x"]


def test_a_member_outside_the_path_is_the_daemons_fault() -> None:
    with pytest.raises(ArchiveNotRooted, match="'etc/passwd'"):
        rooted(archive(entry("app", tarfile.DIRTYPE), entry("etc/passwd")), io.BytesIO(), "app")
    # A name that only starts like the path is not beneath it.
    with pytest.raises(ArchiveNotRooted):
        rooted(archive(entry("application")), io.BytesIO(), "app")


@pytest.mark.parametrize(
    "outside",
    [
        entry("tests/test.sh"),  # beside the path: unpacked over the verifier's tests
        entry("app/../tests/test.sh"),
        entry("/usr/local/bin/python3"),
        entry("app/./x"),
        entry("application/x"),  # a name that only starts like the path's
        entry("app/evil", tarfile.LNKTYPE, linkname="tests/test.sh"),
        entry("app/evil", tarfile.LNKTYPE, linkname="app/../etc/shadow"),
    ],
    ids=["beside", "climbing", "absolute", "dot", "prefix", "hard-link", "hard-link-climbing"],
)
def test_a_member_outside_the_state_path_is_refused(outside: tarfile.TarInfo) -> None:
    src = archive(entry("app", tarfile.DIRTYPE), entry("app/stats.py"), outside)
    with pytest.raises(StateArchiveError, match="outside it"):
        scan(src, top="app")


def test_members_beneath_the_state_path_pass_the_confinement() -> None:
    src = archive(
        entry("app/", tarfile.DIRTYPE),
        entry("app/src/", tarfile.DIRTYPE),
        entry("app/src/stats.py"),
        entry("app/again", tarfile.LNKTYPE, linkname="app/src/stats.py"),
        entry(
            "app/py", tarfile.SYMTYPE, linkname="../usr/bin/python3"
        ),  # a link's place is decided later
    )
    assert scan(src, top="app").members == 5


def members(buf: io.BytesIO) -> dict[str, tarfile.TarInfo]:
    buf.seek(0)
    with tarfile.open(fileobj=buf, mode="r") as tar:
        return {m.name: m for m in tar.getmembers()}


def test_a_frozen_dangling_link_points_elsewhere_and_keeps_its_name() -> None:
    src = archive(
        entry("app", tarfile.DIRTYPE),
        entry("app/tally.txt", tarfile.SYMTYPE, linkname="/tmp/tally.expected"),
        entry("app/keep", tarfile.SYMTYPE, linkname="lib"),
    )
    out = io.BytesIO()
    with_frozen(src, out, {"app/tally.txt": FrozenLink(target="/nowhere")})
    found = members(out)
    assert found["app/tally.txt"].linkname == "/nowhere"
    assert found["app/keep"].linkname == "lib"


def test_a_link_frozen_to_a_copy_becomes_the_copy_under_its_own_name() -> None:
    src = archive(
        entry("app", tarfile.DIRTYPE),
        entry("app/scratch", tarfile.SYMTYPE, linkname="/tmp"),
        entry("app/other"),
    )
    copy = archive(
        entry("tmp", tarfile.DIRTYPE),
        entry("tmp/seen"),
        entry("tmp/hard", tarfile.LNKTYPE, linkname="tmp/seen"),
    )
    out = io.BytesIO()
    with_frozen(src, out, {"app/scratch": FrozenLink(copy=copy, top="tmp")})
    found = members(out)
    assert found["app/scratch"].isdir()
    assert found["app/scratch/seen"].isreg()
    assert found["app/scratch/hard"].linkname == "app/scratch/seen"
    assert "app/other" in found and "tmp" not in found
    out.seek(0)
    with tarfile.open(fileobj=out) as tar:
        reader = tar.extractfile("app/scratch/seen")
        assert reader is not None and reader.read() == b"x"


def test_files_named_finds_files_and_fifos_not_folders_or_links() -> None:
    src = archive(
        entry("app", tarfile.DIRTYPE),
        entry("app/data.txt"),
        entry("app/pipe", tarfile.FIFOTYPE),
        entry("app/l", tarfile.SYMTYPE, linkname="data.txt"),
    )
    wanted = {"app/data.txt", "app/pipe", "app/l", "app", "app/none"}
    assert files_named(src, wanted) == {"app/data.txt", "app/pipe"}
