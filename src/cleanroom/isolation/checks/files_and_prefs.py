"""Isolation test 8, files_and_prefs: a file and preferences written in one environment
must turn up nowhere else.

One environment (rotating by trial) types a shell command into its own terminal that
writes three tokens: a file in its Documents folder, a GTK bookmark (a preference every
GTK file dialog reads) and a colour palette in its LibreOffice profile (LibreOffice
offers every palette it finds there). Once the host sees all three in the writer's own
places, the same search that every other environment gets must find all three in the
writer's own home and profiles (else the trial is blind: its rows are ``lost``). Then
every other environment's home, program profiles and log folder in the run folder are
searched with the token scanner. A token of this trial found there is ``cross`` from the
writer.

Leaks it must catch: ``shared-home`` and ``shared-profile``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from cleanroom.core.detectors import missing_tokens, placement_rows, unless_seen
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.tokens import TokenHit
from cleanroom.environments.errors import PoolError
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.isolation.checks.holdings import holdings
from cleanroom.lifecycle import wait_until
from cleanroom.tree_scan import ScanError, scan_file, scan_tree

NAME = "files_and_prefs"
WRITTEN_WITHIN_S = 30.0
# LibreOffice reads every palette in its profile's user/config; it rewrites its other
# settings file (registrymodifications.xcu) whenever it likes, so a palette is the
# preference that stays as written.
_PALETTE_DIR = Path("user/config")
_PALETTE = "files-and-prefs.soc"
_BOOKMARKS = ".config/gtk-3.0/bookmarks"


class FilesNotWritten(PoolError):
    """The writer's shell did not write the trial's files in time."""


def write_command(file_token: str, bookmark_token: str, palette_token: str, profile: Path) -> str:
    """The shell command the writer types: a token file, a GTK bookmark and a LibreOffice
    colour palette (one colour named by the token), each holding its own token."""
    palette = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<ooo:color-table xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
        'xmlns:ooo="http://openoffice.org/2004/office">'
        f'<draw:color draw:name="{palette_token}" draw:color="#d81b60"/></ooo:color-table>'
    )
    return (
        f"cd ~ && mkdir -p Documents .config/gtk-3.0 '{profile / _PALETTE_DIR}'"
        f" && echo {file_token} > Documents/files-and-prefs-{file_token}.txt"
        f" && echo 'file:///tmp/{bookmark_token} {bookmark_token}' >> {_BOOKMARKS}"
        f" && echo '{palette}' > '{profile / _PALETTE_DIR / _PALETTE}'"
    )


class FilesAndPrefsCheck(IsolationCheck):
    """A token file and token preferences in one environment; search all the others."""

    name: ClassVar[str] = NAME
    number: ClassVar[int] = 8
    schedule: ClassVar[Schedule] = Schedule(window=3, soak=3, on_demand=True)
    detects: ClassVar[tuple[Leak, ...]] = (Leak.SHARED_HOME, Leak.SHARED_PROFILE)
    needs: ClassVar[tuple[str, ...]] = ("writer", "terminal")

    def pairs(self, ctx: TrialContext) -> list[tuple[str, str]]:
        """From each acting environment to every other environment, the canary included."""
        return [(a, b) for a in ctx.acting_envs for b in ctx.pool.names if a != b]

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        """Write the three tokens in one environment, then search every other one."""
        pool = ctx.pool
        writer = ctx.acting_envs[trial % len(ctx.acting_envs)]
        others = [n for n in pool.names if n != writer]
        tokens = [ctx.mint(writer) for _ in range(3)]
        wanted = {str(t) for t in tokens}
        places = pool.places(writer)
        lo_profiles = [p for p in places.profiles if "libreoffice" in p.name]
        if not lo_profiles:
            raise FilesNotWritten(f"{writer} runs no Writer, so it has no LibreOffice profile")
        profile = lo_profiles[0]
        home = places.home

        handle = LocalHandle(pool, writer)
        handle.focus(program="terminal")
        file_token, bookmark_token, pref_token = (str(t) for t in tokens)
        handle.type_text(write_command(file_token, bookmark_token, pref_token, profile))
        handle.hotkey("Return")
        written = [
            home / "Documents" / f"files-and-prefs-{tokens[0]}.txt",
            home / _BOOKMARKS,
            profile / _PALETTE_DIR / _PALETTE,
        ]
        started = time.monotonic()
        if not wait_until(lambda: _all_written(written, wanted), WRITTEN_WITHIN_S, poll_s=0.2):
            raise FilesNotWritten(
                f"{writer}'s terminal did not write {', '.join(map(str, written))} "
                f"within {WRITTEN_WITHIN_S:.0f} s"
            )
        written_after_s = time.monotonic() - started

        rows: list[IsolationRow] = []
        evidence: dict[str, object] = {}
        # The search every other environment gets must find the three tokens in the
        # writer's own places first: a search blind to them proves nothing elsewhere.
        try:
            own = holdings(pool, writer, clipboard=False)
            missing = missing_tokens(wanted, own.hits, f"{writer}'s own places")
        except PoolError as exc:
            missing = f"{writer}'s own places could not be searched: {exc}"
        evidence[writer] = {"own_tokens_missing": missing}
        for other in others:
            try:
                h = holdings(pool, other, clipboard=False)
            except PoolError as exc:
                why = f"{other}'s places could not be searched: {exc}"
                rows.append(
                    IsolationRow(NAME, trial, writer, other, RowResult.LOST, ctx.window, why)
                )
                evidence[other] = why
                continue
            mine = [x for x in h.hits if str(x.token) in wanted]
            evidence[other] = {
                "searched": h.searched,
                "hits": [(str(x.token), x.source) for x in mine],
            }
            rows.extend(placement_rows(NAME, trial, ctx.window, other, mine, [writer]))
        harness_hits = _run_folder_hits(ctx, wanted)
        ctx.write_evidence(
            NAME,
            trial,
            "files-and-prefs.json",
            {
                "writer": writer,
                "tokens": sorted(wanted),
                "written": [str(p) for p in written],
                "written_after_s": written_after_s,
                "others": evidence,
                # The harness's own files may quote tokens; they are listed, not judged.
                "run_folder_outside_environment_logs": harness_hits,
            },
        )
        return unless_seen([_with_detail(r) for r in rows], missing)


def _all_written(paths: list[Path], wanted: set[str]) -> bool:
    found: set[str] = set()
    for p in paths:
        if not p.exists():
            return False
        try:
            found.update(str(h.token) for h in scan_file(p))
        except OSError:
            return False
    return wanted <= found


def _run_folder_hits(ctx: TrialContext, wanted: set[str]) -> dict[str, list[str]]:
    """Tokens of this trial in the run folder outside the environments' log folders and
    the evidence (the harness's own logs, the action log), and what could not be read
    there; evidence only, no row relies on it."""
    hits: list[TokenHit] = []
    errors: list[ScanError] = []
    for entry in sorted(ctx.run_dir.iterdir()):
        if entry.name in ("logs", "evidence"):
            continue
        scan = scan_tree(entry, deadline_s=60.0)  # a file is scanned as a tree of one
        hits.extend(scan.hits)
        errors.extend(scan.errors)
    return {
        "hits": [f"{h.token} in {h.source}" for h in hits if str(h.token) in wanted],
        "unreadable": [str(e) for e in errors],
    }


def _with_detail(row: IsolationRow) -> IsolationRow:
    if row.result is not RowResult.CROSS or row.detail:
        return row
    detail = f"a token file or preference of {row.from_env} found in {row.to_env}'s places"
    return IsolationRow(
        row.test, row.trial, row.from_env, row.to_env, row.result, row.window, detail
    )
