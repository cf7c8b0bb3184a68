"""``cleanroom verify --image-map FROM=TO``: pairs, and a clear error for a bad one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer

from cleanroom.cli.verify import parse_image_map, read_image_map_file


def test_pairs_are_read_in_order() -> None:
    assert parse_image_map(["python:3.12=local/py", "a/b:1=c"]) == (
        ("python:3.12", "local/py"),
        ("a/b:1", "c"),
    )


@pytest.mark.parametrize("item", ["python:3.12", "=x", "x=", "a = b"])
def test_a_malformed_pair_is_a_usage_error_naming_it(item: str) -> None:
    with pytest.raises(typer.BadParameter, match="FROM=TO"):
        parse_image_map([item])


def test_one_image_cannot_be_mapped_two_ways() -> None:
    with pytest.raises(typer.BadParameter, match="mapped twice"):
        parse_image_map(["a=b", "a=c"])


def test_a_map_file_gives_the_same_pairs(tmp_path: Path) -> None:
    file = tmp_path / "images.toml"
    file.write_text('[image_map]\n"python:3.12" = "local/py"\n"a/b:1" = "c"\n')

    assert read_image_map_file(file) == (("python:3.12", "local/py"), ("a/b:1", "c"))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[image_map\n", "images.toml"),
        ('[other]\n"a" = "b"\n', "one [image_map] table"),
        ('[image_map]\n"a" = 3\n', "'a' does not map to one image name"),
        ('[image_map]\n"a" = "b c"\n', "'a' does not map"),
    ],
)
def test_a_bad_map_file_is_a_usage_error_naming_the_file(
    tmp_path: Path, text: str, says: str
) -> None:
    file = tmp_path / "images.toml"
    file.write_text(text)

    with pytest.raises(typer.BadParameter, match=re.escape(says)):
        read_image_map_file(file)
