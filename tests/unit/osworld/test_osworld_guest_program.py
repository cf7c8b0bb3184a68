"""The one way a helper program runs in a guest: each way it can fail is raised as the
caller's error class with a reason naming the program, and its argv reaches it intact."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.guests.local import LocalGuest
from cleanroom.verifiers.osworld import guest_program


class HelperBroke(Exception):
    pass


@pytest.fixture
def guest(tmp_path: Path) -> LocalGuest:
    return LocalGuest(home=str(tmp_path / "home"))


def _run_json(guest: LocalGuest, source: str, *args: str, limit: float = 20) -> dict[str, object]:
    return guest_program.run_json(
        guest, source, list(args), limit=limit, what="the test helper", fails_as=HelperBroke
    )


def test_arguments_reach_the_program_unread_by_any_shell(guest: LocalGuest) -> None:
    odd = "$(touch pwned); `id` ' \" \n; | & *"
    answer = _run_json(guest, "import json, sys; print(json.dumps({'argv': sys.argv[1:]}))", odd)
    assert answer == {"argv": [odd]}


def test_the_program_runs_isolated_from_the_environment_s_python_settings(
    guest: LocalGuest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A module the agent planted on PYTHONPATH is never imported by the helper (-I).
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "json.py").write_text("raise SystemExit('planted json imported')\n")
    monkeypatch.setenv("PYTHONPATH", str(planted))
    assert _run_json(guest, "import json; print(json.dumps({'ok': True}))") == {"ok": True}


def test_a_non_zero_exit_names_the_program_and_its_stderr(guest: LocalGuest) -> None:
    with pytest.raises(HelperBroke, match=r"the test helper failed \(3\): went wrong"):
        _run_json(guest, "import sys; sys.stderr.write('went wrong'); sys.exit(3)")


def test_a_helper_past_its_limit_is_killed_and_named(guest: LocalGuest) -> None:
    with pytest.raises(HelperBroke, match="the test helper ran past its 1 s limit"):
        _run_json(guest, "import time; time.sleep(30)", limit=1)


@pytest.mark.parametrize("printed", ["not json", "[1, 2]", ""])
def test_an_answer_that_is_no_json_object_is_an_error(guest: LocalGuest, printed: str) -> None:
    with pytest.raises(HelperBroke, match=r"the test helper (did not answer in JSON|answered)"):
        _run_json(guest, f"print({printed!r})")


def test_run_gives_the_raw_output(guest: LocalGuest) -> None:
    out = guest_program.run(
        guest,
        "import sys; sys.stdout.buffer.write(bytes(range(256)))",
        [],
        limit=20,
        what="the test helper",
        fails_as=HelperBroke,
    )
    assert out == bytes(range(256))


def test_a_missing_python_is_an_error_of_the_caller_s_class(
    guest: LocalGuest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(guest_program, "SYSTEM_PYTHON", "/nonexistent/python3")
    with pytest.raises(HelperBroke, match="the guest cannot run /nonexistent/python3"):
        _run_json(guest, "print(json.dumps({}))")
