"""The token sweep's planted control: a foreign token planted in a home must be found.

After the windows (never inside one, so no measured window is touched) and after the
end-of-run sweep, the harness writes a file holding a token of one environment (minted
for the control) into another environment's home, as a leak would leave it, owned by
that home's user. The sweep's reading of the pool's places and its attribution
(`core.sweep`) must report it as ``cross`` from the token's environment to the home's,
at that file; the result is one leaky-control cell of the sweep, so the report can say
the sweep was proven in this run. The file is removed again afterwards.
"""

from __future__ import annotations

import time

from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.isolation import CONTROL_WINDOW, SWEEP_TEST, RowResult
from cleanroom.core.sweep import sweep_rows
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.environments.interface import Desktops
from cleanroom.isolation.checks.token_sweep import read_places
from cleanroom.store.rundb import LeakyControlResult

CONTROL_SEQ = 950


def run_sweep_control(pool: Desktops) -> LeakyControlResult:
    """Plant a token of the first acting environment in the home of the second (of the
    canary when there is no second), sweep, and judge whether it was found and named."""
    acting = [n for n in pool.names if n != CANARY_ENV]
    source = acting[0]
    target = acting[1] if len(acting) > 1 else CANARY_ENV
    token = mint(RolloutId(source, CONTROL_WINDOW, CONTROL_SEQ))
    leak = f"planted: a file holding {source}'s token in {target}'s home"
    path = pool.places(target).home / f"leaked-{token}.txt"
    try:
        path = pool.write_home_file(target, path.name, f"leaked {token}\n".encode())
        readings = read_places(pool, time.time())
    except OSError as exc:
        return LeakyControlResult(SWEEP_TEST, leak, False, 0, 0, f"not wired in: {exc}")
    finally:
        path.unlink(missing_ok=True)
    # The control's token is the one this run minted that can be in a place now.
    rows = sweep_rows(0, CONTROL_WINDOW, readings, pool.names, minted={str(token)})
    cross = [r for r in rows if r.result is RowResult.CROSS]
    named = [
        r
        for r in cross
        if (r.from_env, r.to_env) == (source, target)
        and str(token) in r.detail
        and str(path.resolve()) in r.detail
    ]
    if named:
        detail = named[0].detail
    elif any(str(token) in r.detail for r in cross):
        detail = f"the planted token was found but not attributed {source} to {target} at {path}"
    else:
        lost = [r.detail for r in rows if r.result is RowResult.LOST]
        detail = f"the planted token was not found ({'; '.join(lost[:2]) or 'all clean'})"
    return LeakyControlResult(SWEEP_TEST, leak, bool(named), len(rows), len(cross), detail[:500])
