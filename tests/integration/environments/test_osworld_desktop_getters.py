"""OSWorld's ``accessibility_tree`` and ``vlc_playing_info`` getters on a real pool
environment, through its `DesktopGuest`: the tree holds what was typed into the
environment's Writer, and VLC, started as the VLC tasks start it, answers on its web
interface with the settings the environment gives it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.guests.desktop import DesktopGuest
from cleanroom.lifecycle import wait_until
from cleanroom.verifiers.osworld.cached_file import CachedFile
from cleanroom.verifiers.osworld.getters import GETTERS, GetterContext
from cleanroom.verifiers.osworld.getters.vlc_status import VlcNotAnswering
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task_cache import TaskCache

pytestmark = [pytest.mark.slow, pytest.mark.beside_desktops]

ENV = "env01"


@pytest.fixture(scope="module")
def pool(desktop_stack: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    p = Pool(PoolConfig(envs=1, programs=("writer",)), tmp_path_factory.mktemp("getters"))
    p.start()
    try:
        yield p
    finally:
        p.stop()


@pytest.fixture(scope="module")
def ctx(pool: Pool) -> Iterator[GetterContext]:
    cache = TaskCache(None, "desktop-getters")
    cache.reset()
    guest = DesktopGuest(ENV, pool.env(ENV).describe())
    try:
        yield GetterContext(guest, CheckSettings(), cache)
    finally:
        guest.close()


def get(ctx: GetterContext, kind: str, **config: Any) -> Any:
    return GETTERS[kind](ctx, {"type": kind, **config})


def test_the_accessibility_tree_holds_what_was_typed_in_writer(
    pool: Pool, ctx: GetterContext
) -> None:
    handle = LocalHandle(pool, ENV)
    handle.focus(program="writer")
    handle.type_text("read by the getter")

    def typed() -> str | None:
        tree: str = get(ctx, "accessibility_tree")
        return tree if "read by the getter" in tree else None

    tree = wait_until(typed, 20, 0.5)
    assert tree is not None, "the typed text never showed in the getter's tree"
    assert tree.startswith("<desktop-frame ") and 'name="soffice"' in tree


def test_vlc_playing_info_reads_the_launched_vlcs_status(ctx: GetterContext) -> None:
    if shutil.which("vlc") is None:
        pytest.skip("VLC is not installed")
    with pytest.raises(VlcNotAnswering):
        get(ctx, "vlc_playing_info", dest="status.xml")
    ctx.guest.spawn("VLC_VERBOSE=-1 vlc --no-audio --no-video-title-show", shell=True)

    def answered() -> CachedFile | None:
        try:
            saved: CachedFile | None = get(ctx, "vlc_playing_info", dest="status.xml")
        except VlcNotAnswering:
            return None
        return saved

    saved = wait_until(answered, 20, 0.5)
    assert saved is not None, "VLC's web interface never answered"
    assert b"<state>stopped</state>" in saved.data
