"""Pool options are checked once, in `PoolConfig`; ``envs up`` turns a refusal into a usage
error before anything starts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cleanroom.cli import app
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.pool.plan import PoolConfig


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"envs": 0}, "between 1 and 32 environments"),
        ({"envs": 33}, "between 1 and 32 environments"),
        ({"programs": ("writer", "paint")}, "unknown program(s) paint"),
        ({"envs": 1, "leak": Leak.SHARED_HOME}, "at least two environments"),
        ({"envs": 2, "containers": True, "leak": Leak.SHARED_HOME}, "host pool only"),
    ],
)
def test_the_pool_config_refuses_bad_options_with_a_clear_message(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        PoolConfig(**options)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--envs", "40"], "between 1 and 32 environments"),
        (["--programs", "writer,paint"], "unknown program(s) paint"),
        (["--envs", "1", "--leaky", "shared-home"], "at least two environments"),
        (["--containers", "--leaky", "shared-home"], "host pool only"),
        (["--leaky", "shared-kitchen"], "unknown leak"),
    ],
)
def test_envs_up_turns_a_refused_option_into_a_usage_error_before_starting(
    args: list[str], message: str, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["envs", "up", *args, "--run", str(run)])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert not run.exists()
