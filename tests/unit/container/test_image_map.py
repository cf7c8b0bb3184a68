"""``cleanroom verify --image-map FROM=TO``: pairs, and a clear error for a bad one."""

from __future__ import annotations

import pytest
import typer

from cleanroom.cli.verify import parse_image_map


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
