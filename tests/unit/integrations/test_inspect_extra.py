"""The inspect_ai integration without its extra: importing it says which extra brings it.
(What it does with inspect_ai installed is tested in tests/integration/inspect, in the
Python that has it.)"""

from __future__ import annotations

import importlib
import sys

import pytest

from cleanroom.core.errors import ExtraNotInstalledError

MODULES = (
    "cleanroom.integrations.inspect_registry",
    "cleanroom.integrations.inspect_scorer",
    "cleanroom.integrations.inspect_sandbox",
)


@pytest.mark.parametrize("module", MODULES)
def test_importing_it_without_inspect_ai_names_the_extra(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # None: import raises ImportError
    for name in MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(ExtraNotInstalledError) as raised:
        importlib.import_module(module)
    assert raised.value.extra == "inspect"
    assert "pip install 'cleanroom[inspect]'" in str(raised.value)
