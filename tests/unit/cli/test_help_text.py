"""Help texts print what they say: Rich markup must not eat a TOML table's name."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cleanroom.cli import app


@pytest.mark.parametrize("command", ["verify", "audit"])
def test_image_map_file_help_names_the_table(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "[image_map]" in result.output
