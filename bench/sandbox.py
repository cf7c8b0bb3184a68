"""What one environment's sandbox costs: making it, entering a command, ending it, and
the memory of its first processes, against bare namespaces in the same run; and what a
display's server costs in a sandbox of its own, against the same server on the host.

    .venv/bin/python bench/sandbox.py [--trials 30] [--no-write]

The sandbox is `Sandbox` as the pool makes it (``runc``: its own overlay root, device
nodes, sized tmpfs mounts, cgroup with limits, the system call filter). The baseline is
what a home-made sandbox started from: ``unshare`` making the same five namespaces
around one process, and ``nsenter`` entering them. Trials interleave the two. Written to
the ``## Sandbox`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import statistics
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

from cleanroom.environments.session.sandbox import Entry, Sandbox, runtime_environment
from cleanroom.environments.session.sandbox_spec import SandboxLayout, SandboxProtections
from cleanroom.environments.x11.display import DisplayView, XvfbDisplay
from cleanroom.environments.x11.screen import Screen
from results_md import write_section

SECTION = "## Sandbox"
ROOT = Path("/var/lib/cleanroom/bench-sandbox")
UNSHARE = ["unshare", "--mount", "--ipc", "--net", "--pid", "--uts", "--fork", "--mount-proc"]


def _pss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return float(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            todo += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
    return out


def _runc_trial(layout: SandboxLayout) -> tuple[float, float, float, float]:
    t0 = time.perf_counter()
    box = Sandbox.start("bench", layout, ROOT / "sandbox.log", owner="crbench")
    t1 = time.perf_counter()
    argv, _ = box.command(Entry(["true"], 65534, 65534, "/", {"PATH": "/usr/bin:/bin"}))
    subprocess.run(argv, check=True, env=runtime_environment())
    t2 = time.perf_counter()
    pss = sum(_pss_mb(p) for p in _tree(box.init_pid))
    box.stop()
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, pss


def _bare_trial() -> tuple[float, float, float, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([*UNSHARE, "sleep", "infinity"], start_new_session=True)
    pid = None
    while pid is None:
        kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        pid = int(kids[0]) if kids else None
    t1 = time.perf_counter()
    subprocess.run(
        ["nsenter", f"--target={pid}", "--ipc", "--pid", "--net", "--mount", "--uts", "true"],
        check=True,
    )
    t2 = time.perf_counter()
    pss = sum(_pss_mb(p) for p in _tree(proc.pid))
    os.kill(pid, 9)
    proc.wait()
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, pss


def _display_trial(view: DisplayView | None) -> tuple[float, float, float, float]:
    """Start until it answers, one screenshot, end, and the PSS of the server's processes
    (in a sandbox: its first processes too)."""
    t0 = time.perf_counter()
    display = XvfbDisplay.start(ROOT / "display.auth", view=view)
    t1 = time.perf_counter()
    screen = Screen(display.name)
    screen.screenshot_png()
    t2 = time.perf_counter()
    screen.close()
    if display.sandbox is not None:
        pss = sum(_pss_mb(p) for p in _tree(display.sandbox.init_pid))
        leader = display.proc.group_leader() if hasattr(display.proc, "group_leader") else None
        pss += sum(_pss_mb(p) for p in _tree(leader)) if leader else 0.0
    else:
        pss = sum(_pss_mb(p) for p in _tree(display.pid))
    display.stop()
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, pss


def _writer_start(layout: SandboxLayout, own_inodes: bool, profile: Path) -> float:
    """LibreOffice started headless in a fresh profile, converting a small text file to
    a Writer document and quitting, in a sandbox whose root is its own overlay or the
    host's own inodes."""
    box = Sandbox.start(
        "bench", layout, ROOT / "sandbox.log", owner="crbench",
        protections=SandboxProtections(own_inodes=own_inodes),
    )  # fmt: skip
    try:
        shutil.rmtree(profile, ignore_errors=True)
        text = profile.parent / "note.txt"
        text.write_text("A note for Writer.\n" * 200)
        (profile.parent / "note.odt").unlink(missing_ok=True)
        argv, _ = box.command(Entry(
            ["soffice", f"-env:UserInstallation=file://{profile}", "--headless",
             "--norestore", "--convert-to", "odt", "--outdir", str(profile.parent), str(text)],
            0, 0, str(profile.parent), {"PATH": "/usr/bin:/bin", "HOME": str(profile.parent)},
        ))  # fmt: skip
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, env=runtime_environment(), timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        took = time.perf_counter() - t0
        if not (profile.parent / "note.odt").is_file():
            raise RuntimeError("LibreOffice wrote no document in the sandbox")
        return took
    finally:
        box.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    home = ROOT / "homes" / "mine"
    home.mkdir(parents=True, exist_ok=True)
    layout = SandboxLayout(writable=(home,), hidden=(ROOT / "homes",), display_number=None)
    runs: dict[str, list[tuple[float, float, float, float]]] = {
        "runc": [],
        "bare": [],
        "x-sandboxed": [],
        "x-host": [],
    }
    view = DisplayView(owner="crbench", hidden=(ROOT / "homes",))
    writer: dict[str, list[float]] = {"overlay": [], "host inodes": []}
    load_before = os.getloadavg()[0]
    try:
        for _ in range(args.trials):
            runs["runc"].append(_runc_trial(layout))
            runs["bare"].append(_bare_trial())
            runs["x-sandboxed"].append(_display_trial(view))
            runs["x-host"].append(_display_trial(None))
        profile = home / "lo-profile"
        for _ in range(max(3, args.trials // 4)):
            writer["overlay"].append(_writer_start(layout, True, profile))
            writer["host inodes"].append(_writer_start(layout, False, profile))
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)
    load_after = os.getloadavg()[0]

    def med(name: str, i: int) -> float:
        return statistics.median(t[i] for t in runs[name])

    rows = []
    for name, what in (
        ("runc", "the sandbox (runc)"),
        ("bare", "bare namespaces (unshare, nsenter)"),
    ):
        rows.append(
            f"| {what} | {med(name, 0) * 1000:.0f} | {med(name, 1) * 1000:.0f} | "
            f"{med(name, 2) * 1000:.0f} | {med(name, 3):.1f} |"
        )
    displays = []
    for name, what in (
        ("x-sandboxed", "in a sandbox of its own, as nobody"),
        ("x-host", "on the host, as root (before)"),
    ):
        displays.append(
            f"| {what} | {med(name, 0) * 1000:.0f} | {med(name, 1) * 1000:.1f} | "
            f"{med(name, 2) * 1000:.0f} | {med(name, 3):.1f} |"
        )
    x_ratio = med("x-sandboxed", 0) / med("x-host", 0)
    ratio = (med("runc", 0) + med("runc", 2)) / (med("bare", 0) + med("bare", 2))
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}"
    about = (
        f"Command: `python bench/sandbox.py --trials {args.trials}` "
        f"({datetime.now(UTC):%Y-%m-%d}, {machine}). Median of {args.trials} trials, "
        "interleaved. Make: until the sandbox's first process runs; enter: one `true` run "
        "inside as a user, start to exit; end: until every process in it is gone and its "
        "stage (and, for runc, its cgroup) is removed; PSS: the first processes (runc: "
        "`tini` and its `sleep`; bare: `unshare` and its `sleep`). The 1-minute load "
        f"average was {load_before:.1f} at the start and {load_after:.1f} at the end."
    )
    reset_ms = (med("runc", 0) + med("runc", 2)) * 1000
    text = "\n".join(
        [
            SECTION,
            "",
            about,
            "",
            "| sandbox | make ms | enter ms | end ms | first processes PSS MB |",
            "|---|---|---|---|---|",
            *rows,
            "",
            f"Making and ending a sandbox costs {ratio:.1f} times the bare namespaces: "
            f"{reset_ms:.0f} ms a reset, against resets of 0.2 s (warm standby) to 4 s "
            "(in place). The home-made sandbox runc replaced (unshare, a Python first "
            "process, nsenter and a Python launcher for the filter) measured about 30 ms "
            "to make, 50 to 70 ms to end and 11 MB for its first process (*Desktop "
            "environments*, the runs before 2026-12-02).",
            "",
            "A display's X server (Xvfb, 1280x800x24), started until it answers, one "
            "screenshot, ended; PSS of its processes (in a sandbox, its first processes "
            "too):",
            "",
            "| X server | start ms | first screenshot ms | end ms | PSS MB |",
            "|---|---|---|---|---|",
            *displays,
            "",
            f"The server's own sandbox makes its start {x_ratio:.2f} times the host's. A "
            "display starts once per environment (and again after its crash), not per "
            "reset.",
            "",
            f"LibreOffice's start through the sandbox's own overlay root, against the same "
            f"sandbox on the host's own inodes (a bind of `/`), median of "
            f"{len(writer['overlay'])} interleaved starts (`soffice --headless "
            f"--convert-to odt` of a small text file, a fresh profile each): "
            f"{statistics.median(writer['overlay']):.2f} s against "
            f"{statistics.median(writer['host inodes']):.2f} s, "
            f"{statistics.median(writer['overlay']) / statistics.median(writer['host inodes']):.2f}"
            " times.",
        ]
    )
    print(text)
    if not args.no_write:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
