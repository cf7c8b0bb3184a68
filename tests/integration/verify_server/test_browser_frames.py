"""In real headless Chromium, the frame page counts frames while its tab is visible and
stops counting while the tab is really hidden (another tab in front of it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from cleanroom.lifecycle import wait_until
from cleanroom.verify_server.client import Lease, VerifyClient

pytestmark = pytest.mark.browser


def visibility(tab: Any) -> str:
    return str(tab.evaluate("document.visibilityState"))


def hide_behind_a_new_tab(tab: Any) -> Any:
    """Open another tab in the same window; it opens in front, hiding ``tab``.

    (Calling ``bring_to_front`` on the new tab as well briefly re-shows the old one.)
    """
    with tab.context.expect_page() as opened:
        tab.evaluate("window.open('about:blank', '_blank')")
    return opened.value


def test_frames_are_counted_while_the_tab_is_visible(
    tab: Any, client: VerifyClient, new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease()
    tab.goto(lease.frames_url)
    assert visibility(tab) == "visible"
    assert wait_until(lambda: client.frames(lease.lease_id) >= 20, 5)
    first = client.frames(lease.lease_id)
    assert wait_until(lambda: client.frames(lease.lease_id) > first, 5)


def test_frames_stay_flat_while_the_tab_is_hidden_and_resume_when_shown(
    tab: Any, client: VerifyClient, new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease()
    tab.goto(lease.frames_url)
    assert wait_until(lambda: client.frames(lease.lease_id) >= 10, 5)

    front = hide_behind_a_new_tab(tab)
    assert visibility(tab) == "hidden"
    # Frames counted just before hiding may still be in flight: hidden tabs run timers at
    # most once a second, so let the last report land before taking the reference.
    time.sleep(1.5)
    assert visibility(tab) == "hidden"
    hidden_at = client.frames(lease.lease_id)
    assert hidden_at >= 10
    time.sleep(1.5)
    assert visibility(tab) == "hidden"
    assert client.frames(lease.lease_id) == hidden_at

    front.close()
    tab.bring_to_front()
    assert visibility(tab) == "visible"
    assert wait_until(lambda: client.frames(lease.lease_id) >= hidden_at + 10, 5)


def test_every_frame_counted_before_hiding_reaches_the_server(
    tab: Any, client: VerifyClient, new_lease: Callable[..., Lease]
) -> None:
    lease = new_lease()
    tab.goto(lease.frames_url)
    assert wait_until(lambda: client.frames(lease.lease_id) >= 5, 5)
    hide_behind_a_new_tab(tab)
    # The page shows the total it has reported; the server must end up with exactly that.
    shown = tab.locator("#frames")
    assert wait_until(lambda: client.frames(lease.lease_id) == int(shown.inner_text()), 3)
