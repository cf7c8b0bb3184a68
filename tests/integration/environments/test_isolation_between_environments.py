"""Two environments at once: each receives exactly its own typing and clipboard."""

from __future__ import annotations

import threading

from cleanroom.core.tokens import RolloutId, mint, scan_text
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.pool import Pool
from cleanroom.lifecycle import wait_until


def test_two_environments_typed_into_at_once_each_receive_exactly_their_own_text(
    pool: Pool,
) -> None:
    handles = {n: LocalHandle(pool, n) for n in ("env01", "env02")}
    texts = {n: f"typed by {mint(RolloutId(n, 1, 1))} " * 3 for n in handles}
    for h in handles.values():
        h.focus(program="writer")
    threads = [threading.Thread(target=handles[n].type_text, args=(texts[n],)) for n in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    def documents() -> dict[str, str]:
        return {n: h.focused_text()["document_text"].strip() for n, h in handles.items()}

    # Typed keys land in the documents a moment after the last one is sent.
    wait_until(lambda: documents() == {n: t.strip() for n, t in texts.items()}, 10, 0.1)
    for name, h in handles.items():
        document = h.focused_text()["document_text"]
        assert document.strip() == texts[name].strip()
        assert {hit.env for hit in scan_text(document)} == {name}


def test_a_clipboard_set_in_one_environment_is_not_readable_in_another(pool: Pool) -> None:
    one, two = LocalHandle(pool, "env01"), LocalHandle(pool, "env02")
    secret = f"clip {mint(RolloutId('env01', 1, 2))}"
    one.set_clipboard(secret, ("CLIPBOARD", "PRIMARY"))
    assert one.get_clipboard() == secret
    assert secret not in str(two.clipboard())
    assert two.get_clipboard() != secret
