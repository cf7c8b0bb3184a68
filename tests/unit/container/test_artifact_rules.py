"""An artifact's archive passes stricter rules than state: no FIFOs, no set-id bits,
Harbor's exclude patterns; a hard link to what was left out goes too. Its links are
carried as the state's are, and resolved in the verifier's container (test_links.py)."""

from __future__ import annotations

import io
import tarfile

import pytest

from cleanroom.verifiers.container.agent_state.state_archive import (
    ArtifactRules,
    excluded,
    scan,
    without_dropped,
)

from .test_state_archive import archive, entry, names

ARTIFACT = ArtifactRules()


def filtered(src: io.BytesIO, rules: ArtifactRules | None = ARTIFACT) -> io.BytesIO:
    out = io.BytesIO()
    without_dropped(src, out, rules)
    return out


def test_fifos_and_devices_are_listed_and_left_out_of_an_artifact_and_links_kept() -> None:
    src = archive(
        entry("artifacts", tarfile.DIRTYPE),
        entry("artifacts/answer.txt", tarfile.SYMTYPE, linkname="/tests/expected.txt"),
        entry("artifacts/pipe", tarfile.FIFOTYPE),
        entry("artifacts/null", tarfile.CHRTYPE, devmajor=1, devminor=3),
        entry("artifacts/inside", tarfile.SYMTYPE, linkname="kept.txt"),
        entry("artifacts/kept.txt"),
    )

    found = scan(src, ARTIFACT)
    src.seek(0)

    assert found.dropped == ["artifacts/pipe", "artifacts/null"]
    assert names(filtered(src)) == [
        "artifacts",
        "artifacts/answer.txt",
        "artifacts/inside",
        "artifacts/kept.txt",
    ]
    assert found.tree["artifacts/answer.txt"].target == "/tests/expected.txt"
    # Only folders and links are kept for resolving: a file stops a resolution as a
    # missing name does.
    assert sorted(found.tree) == ["artifacts", "artifacts/answer.txt", "artifacts/inside"]


def test_state_keeps_the_fifos_an_artifact_drops() -> None:
    src = archive(
        entry("app", tarfile.DIRTYPE),
        entry("app/pipe", tarfile.FIFOTYPE),
        entry("app/out", tarfile.SYMTYPE, linkname="/etc/passwd"),
    )

    assert scan(src).dropped == []


def test_set_id_bits_are_cleared_in_an_artifact() -> None:
    src = archive(entry("tool", mode=0o6755))

    out = filtered(src)
    out.seek(0)
    with tarfile.open(fileobj=out) as tar:
        assert tar.getmember("tool").mode == 0o755


def test_a_hard_link_to_a_member_left_out_is_left_out_too() -> None:
    # Unpacking a link to nothing would fail the whole archive in the verifier.
    src = archive(
        entry("artifacts", tarfile.DIRTYPE),
        entry("artifacts/pipe", tarfile.FIFOTYPE),
        entry("artifacts/again", tarfile.LNKTYPE, linkname="artifacts/pipe"),
    )

    assert scan(src, ARTIFACT).dropped == ["artifacts/pipe", "artifacts/again"]
    src.seek(0)
    assert names(filtered(src)) == ["artifacts"]


@pytest.mark.parametrize(
    ("name", "pattern", "hit"),
    [
        ("out/cache.tmp", "*.tmp", True),
        ("out/deep/cache.tmp", "*.tmp", True),
        ("out/cache/x.bin", "cache", True),
        ("out/deep/cache/x.bin", "cache", True),
        ("out/cachet/x.bin", "cache", False),
        ("out/deep/x.bin", "deep/x.bin", True),
        ("out", "out", False),  # the artifact itself is never excluded
    ],
)
def test_exclude_patterns_match_as_tar_excludes_do(name: str, pattern: str, hit: bool) -> None:
    assert excluded(name, [pattern]) is hit


def test_excluded_members_are_left_out_without_being_listed_as_dropped() -> None:
    rules = ArtifactRules(exclude=("*.tmp",))
    src = archive(entry("out", tarfile.DIRTYPE), entry("out/a.tmp"), entry("out/a.txt"))

    assert scan(src, rules).dropped == []
    src.seek(0)
    assert names(filtered(src, rules)) == ["out", "out/a.txt"]
