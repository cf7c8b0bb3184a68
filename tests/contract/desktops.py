"""The contract every desktop provider keeps: what `cleanroom.environments.interface`
promises, one promise per function, each run against a started `Desktops`.

Every provider passes these: the in-memory one
(`tests/unit/environments/test_memory_contract.py`) and the host pool, in sandboxes and in
containers (`tests/integration/environments/test_desktop_contract.py`). A runner
parametrizes one test over `cases()` and hands each contract its started pool.

A contract takes a pool with the canary and one acting environment or more, each running
Writer and the terminal, and leaves it as usable as it found it (a contract that breaks
an environment recovers it). The contracts run in the order of `CONTRACTS` on one pool:
the first reads the pool as `start` left it, before any contract raised a generation.
One that needs a capability the provider does not declare skips, naming it.
Where a real desktop takes time to show an effect, the wait is bounded (`WAIT_S`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.outcomes import Cause
from cleanroom.environments.actions import Focus, GetClipboard, Move, SetClipboard, TypeText
from cleanroom.environments.errors import CanaryIsReadOnly, StaleGeneration, UnknownEnvironment
from cleanroom.environments.interface import (
    DOCUMENT,
    OBSERVATIONS,
    SELECTIONS,
    AccessibilityTree,
    Clipboard,
    CommandResult,
    Desktops,
    EnvironmentState,
    FocusedText,
    Kill,
    Screenshot,
    read_action_log,
)
from cleanroom.lifecycle import wait_until

# The environment every contract acts on: the first acting one, which every pool has.
ACTING = "env01"
# How long a real desktop is given to show what an action or a kill did.
WAIT_S = 30.0
# The most a contract reads of a file beneath a home.
READ_LIMIT = 16 * 1024 * 1024
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ZIP_SIGNATURE = b"PK\x03\x04"  # an OpenDocument file is a zip archive

Contract = Callable[[Desktops], None]


def _needs(desktops: Desktops, capability: str) -> None:
    """Skip the contract unless the provider declares ``capability``."""
    if not getattr(desktops.capabilities, capability):
        pytest.skip(f"the {desktops.provider} provider does not declare {capability}")


def _unique(what: str) -> str:
    """A text no earlier contract typed or set (hex digits type on every keyboard map)."""
    return f"{what} {secrets.token_hex(4)}"


def _current(desktops: Desktops) -> int:
    return desktops.generation(ACTING)


# -- the contracts, in the order a runner runs them ------------------------------------------


def environments_are_named_canary_first_at_generation_zero(desktops: Desktops) -> None:
    """``names`` lists the canary ``env00`` first, then ``env01``…; each starts at 0."""
    names = desktops.names
    assert names[0] == CANARY_ENV, names
    assert names == [f"env{i:02d}" for i in range(len(names))], names
    assert ACTING in names
    assert {n: desktops.generation(n) for n in names} == dict.fromkeys(names, 0)


def every_observation_kind_returns_an_instance_of_its_kind(desktops: Desktops) -> None:
    """``observe`` answers each kind of `OBSERVATIONS` with that kind; a screenshot is a
    PNG and the state names the environment, its generation and its screen."""
    generation = _current(desktops)
    for kind in OBSERVATIONS.values():
        seen = desktops.observe(ACTING, generation, kind)
        assert isinstance(seen, kind), (kind, seen)
    shot = desktops.observe(ACTING, generation, Screenshot)
    assert shot.png.startswith(PNG_SIGNATURE)
    state = desktops.observe(ACTING, generation, EnvironmentState)
    assert (state.env, state.generation, state.canary) == (ACTING, generation, False)
    assert state.screen == desktops.screen_size(ACTING)


def typed_actions_are_applied_and_seen_in_typed_observations(desktops: Desktops) -> None:
    """Writer focused and a text typed: the focused text and the accessibility tree show it."""
    text = _unique("typed by the contract")
    generation = _current(desktops)
    focused = desktops.act(ACTING, generation, Focus("focus", program="writer"))
    assert (focused.env, focused.generation, focused.kind) == (ACTING, generation, "focus")
    desktops.act(ACTING, generation, TypeText("type", text))

    def focused_text() -> str:
        return desktops.observe(ACTING, generation, FocusedText).content or ""

    def tree() -> str:
        return desktops.observe(ACTING, generation, AccessibilityTree).xml

    assert wait_until(lambda: text in focused_text(), WAIT_S, poll_s=0.2), focused_text()
    assert wait_until(lambda: text in tree(), WAIT_S, poll_s=0.2), tree()[-2000:]


def the_clipboard_set_is_the_clipboard_read(desktops: Desktops) -> None:
    """A set selection reads back through the action, the observation and the harness."""
    text = _unique("copied by the contract")
    generation = _current(desktops)
    desktops.act(ACTING, generation, SetClipboard("set_clipboard", text, SELECTIONS))
    for selection in SELECTIONS:
        read = desktops.act(ACTING, generation, GetClipboard("get_clipboard", selection))
        assert read.value == text, (selection, read)
    seen = desktops.observe(ACTING, generation, Clipboard)
    assert seen.to_json() == dict.fromkeys(SELECTIONS, text)
    assert desktops.read_selection(ACTING).text == text


def processes_list_the_display_first_then_the_programs(desktops: Desktops) -> None:
    """``processes`` names the display first, then the programs the state names, alive."""
    for name in desktops.names:
        found = desktops.processes(name)
        state = desktops.observe(name, desktops.generation(name), EnvironmentState)
        assert [p.name for p in found] == ["display", *state.programs], (name, found)
        assert all(p.alive and p.pid > 0 for p in found), (name, found)


def an_unknown_environment_is_refused_by_name(desktops: Desktops) -> None:
    """Every call naming an environment the pool lacks raises `UnknownEnvironment`."""
    nobody = "env99"
    calls: dict[str, Callable[[], Any]] = {
        "generation": lambda: desktops.generation(nobody),
        "act": lambda: desktops.act(nobody, 0, Move("move", 1, 1)),
        "observe": lambda: desktops.observe(nobody, 0, EnvironmentState),
        "processes": lambda: desktops.processes(nobody),
        "health": lambda: desktops.health(nobody),
        "breakage": lambda: desktops.breakage(nobody),
        "read_home_file": lambda: desktops.read_home_file(nobody, DOCUMENT, READ_LIMIT),
        "reset": lambda: desktops.reset(nobody),
    }
    answered = []
    for what, call in calls.items():
        try:
            call()
        except UnknownEnvironment:
            continue
        answered.append(what)
    assert answered == [], f"answered for {nobody}: {answered}"


def the_canary_refuses_actions_and_policy_resets(desktops: Desktops) -> None:
    """The canary is observed, never acted on nor reset by a policy."""
    generation = desktops.generation(CANARY_ENV)
    with pytest.raises(CanaryIsReadOnly):
        desktops.act(CANARY_ENV, generation, TypeText("type", "aimed at the canary"))
    with pytest.raises(CanaryIsReadOnly):
        desktops.policy_reset(CANARY_ENV, generation)
    assert desktops.generation(CANARY_ENV) == generation
    state = desktops.observe(CANARY_ENV, generation, EnvironmentState)
    assert (state.env, state.canary) == (CANARY_ENV, True)


def a_file_planted_beneath_the_home_reads_back(desktops: Desktops) -> None:
    """``write_home_file`` plants a file that ``read_home_file`` and ``stat_home_file``
    see; a path where nothing is reads as None."""
    data = _unique("planted by the contract").encode()
    relative = "Desktop/contract-planted.txt"
    desktops.write_home_file(ACTING, relative, data)
    assert desktops.read_home_file(ACTING, relative, READ_LIMIT) == data
    seen = desktops.stat_home_file(ACTING, relative)
    assert seen is not None and (seen.size, seen.regular) == (len(data), True)
    assert desktops.read_home_file(ACTING, "Desktop/nothing-here", READ_LIMIT) is None
    assert desktops.stat_home_file(ACTING, "Desktop/nothing-here") is None


def the_writer_document_is_in_the_home(desktops: Desktops) -> None:
    """On real desktops Writer's document (`interface.DOCUMENT`) is an OpenDocument file
    beneath the home, read as bytes."""
    _needs(desktops, "real_desktops")
    document = desktops.read_home_file(ACTING, DOCUMENT, READ_LIMIT)
    assert isinstance(document, bytes) and document.startswith(ZIP_SIGNATURE), document


def a_stale_generation_is_refused_and_logged(desktops: Desktops) -> None:
    """An action aimed at a generation a reset left raises `StaleGeneration` and is in
    the action log as refused-stale, with the generation it aimed at and the current."""
    old = _current(desktops)
    new = desktops.reset(ACTING, old, why="the contract suite leaves a generation")
    stale = SetClipboard("set_clipboard", _unique("stale"))
    with pytest.raises(StaleGeneration) as refused:
        desktops.act(ACTING, old, stale)
    assert (refused.value.env, refused.value.aimed, refused.value.current) == (ACTING, old, new)
    mine = [r for r in read_action_log(desktops.action_log) if r.env == ACTING]
    last = mine[-1]
    assert (last.generation, last.current, last.kind, last.outcome) == (
        old,
        new,
        "set_clipboard",
        "refused-stale",
    ), last
    assert desktops.read_selection(ACTING).text != stale.text


def reset_raises_the_generation_by_one_hooks_first_and_clears_the_clipboard(
    desktops: Desktops,
) -> None:
    """A reset calls ``before_wipe`` (the clipboard still there) and then ``on_generation``
    with the new generation, returns it, and leaves both selections empty."""
    old = _current(desktops)
    text = _unique("wiped by a reset")
    desktops.act(ACTING, old, SetClipboard("set_clipboard", text, SELECTIONS))
    calls: list[tuple[Any, ...]] = []

    def before_wipe(name: str) -> None:
        if name == ACTING:
            seen = desktops.read_selection(name).text
            calls.append(("before_wipe", desktops.generation(name), seen))

    def on_generation(name: str, generation: int, why: str) -> None:
        if name == ACTING:
            calls.append(("on_generation", generation, why))

    desktops.before_wipe.append(before_wipe)
    desktops.on_generation.append(on_generation)
    try:
        new = desktops.reset(ACTING, old, why="the contract suite resets")
    finally:
        desktops.before_wipe.remove(before_wipe)
        desktops.on_generation.remove(on_generation)
    assert new == old + 1 == _current(desktops)
    assert calls == [
        ("before_wipe", old, text),
        ("on_generation", new, "the contract suite resets"),
    ], calls
    seen = desktops.observe(ACTING, new, Clipboard)
    assert seen.to_json() == dict.fromkeys(SELECTIONS, None)


def without_the_generation_check_a_stale_action_is_applied_only_inside(
    desktops: Desktops,
) -> None:
    """Within `without_generation_check` a stale action is applied (the deliberate
    fault); generations raised inside are kept, and after the block it is refused."""
    old = _current(desktops)
    stale = Move("move", 2, 2)
    with desktops.without_generation_check():
        new = desktops.reset(ACTING, why="the contract suite resets inside the fault")
        applied = desktops.act(ACTING, old, stale)
    assert (applied.generation, new) == (old, old + 1)
    assert _current(desktops) == new
    with pytest.raises(StaleGeneration):
        desktops.act(ACTING, old, stale)


def a_killed_environment_is_the_infrastructures_and_recovers(desktops: Desktops) -> None:
    """Its programs killed by the harness: the environment is unhealthy, broken by the
    infrastructure (a fault injected), and ``recover`` brings it back at the next
    generation, healthy, ready since the kill; the generation it left names who broke it."""
    old = _current(desktops)
    killed_at = time.time()
    desktops.kill(ACTING, Kill.PROGRAMS, "the contract suite kills its programs")
    # A bool: `wait_until` takes an empty list for an answer that came.
    dead = wait_until(lambda: bool(desktops.health(ACTING)), WAIT_S, poll_s=0.2)
    assert dead, desktops.processes(ACTING)
    broken = desktops.breakage(ACTING)
    assert broken is not None and broken.cause is Cause.INFRASTRUCTURE, broken
    new = desktops.recover(ACTING, broken.why, broken)
    assert new == old + 1 == _current(desktops)
    assert desktops.health(ACTING) == []
    assert desktops.breakage(ACTING) is None
    ready = desktops.ready_since(ACTING)
    assert ready is not None and ready > killed_at, (ready, killed_at)
    with pytest.raises(StaleGeneration) as refused:
        desktops.act(ACTING, old, Move("move", 1, 1))
    assert refused.value.left_by == broken


def a_command_runs_inside_and_returns_its_result(desktops: Desktops) -> None:
    """With ``commands``, ``run_inside`` runs where the programs run and returns a
    `CommandResult` with the exit code and output."""
    _needs(desktops, "commands")
    result = desktops.run_inside(ACTING, ["sh", "-c", "echo contract-$((6 * 7)); exit 3"])
    assert isinstance(result, CommandResult)
    assert (result.code, result.output.strip()) == (3, "contract-42"), result


def a_link_planted_inside_is_never_followed_from_the_host(desktops: Desktops) -> None:
    """A link the environment's user makes in its home (to /etc/passwd) reads as None and
    stats as not a regular file: the harness never follows it."""
    _needs(desktops, "commands")
    link = "contract-link"
    made = desktops.run_inside(ACTING, ["sh", "-c", f'ln -sf /etc/passwd "$HOME/{link}"'])
    assert made.code == 0, made
    try:
        assert desktops.read_home_file(ACTING, link, READ_LIMIT) is None
        seen = desktops.stat_home_file(ACTING, link)
        assert seen is not None and not seen.regular, seen
    finally:
        desktops.run_inside(ACTING, ["sh", "-c", f'rm -f "$HOME/{link}"'])


CONTRACTS: tuple[Contract, ...] = (
    environments_are_named_canary_first_at_generation_zero,
    every_observation_kind_returns_an_instance_of_its_kind,
    typed_actions_are_applied_and_seen_in_typed_observations,
    the_clipboard_set_is_the_clipboard_read,
    processes_list_the_display_first_then_the_programs,
    an_unknown_environment_is_refused_by_name,
    the_canary_refuses_actions_and_policy_resets,
    a_file_planted_beneath_the_home_reads_back,
    the_writer_document_is_in_the_home,
    a_stale_generation_is_refused_and_logged,
    reset_raises_the_generation_by_one_hooks_first_and_clears_the_clipboard,
    without_the_generation_check_a_stale_action_is_applied_only_inside,
    a_killed_environment_is_the_infrastructures_and_recovers,
    a_command_runs_inside_and_returns_its_result,
    a_link_planted_inside_is_never_followed_from_the_host,
)


def cases(failing: Mapping[Contract, str] | None = None) -> list[Any]:
    """`CONTRACTS` as pytest parameters named for their functions, for a runner's
    ``parametrize``; a contract in ``failing`` is expected to fail (strictly, so a fix
    is noticed) for the reason given."""
    failing = failing or {}
    return [
        pytest.param(
            contract,
            id=contract.__name__,
            marks=[pytest.mark.xfail(strict=True, reason=failing[contract])]
            if contract in failing
            else [],
        )
        for contract in CONTRACTS
    ]
