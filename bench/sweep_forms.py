"""What reading every form of a token costs the token sweep, on a realistic home and on
the worst an environment can leave.

    .venv/bin/python bench/sweep_forms.py [--work DIR] [--repeat 5]

Builds (once, in ``--work``) a home as a desktop environment leaves it: a LibreOffice
profile and a Chromium profile made by running the programs headless, saved documents
(ODT, DOCX), gzip logs, a shell history and JSON with base64 in it. Times the sweep's
reading of it (`isolation.checks.token_sweep.read_tree`) against the strict scan alone
(`tree_scan.scan_tree`), then the worst cases: a home of zip bombs (the per-environment
budget), one file of 16 MiB of base64, and 20,000 small files each worth decoding.
Prints one line per case: seconds, MB read, MB/s, bytes decoded, unread spots, the
harness's peak RSS.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import io
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from cleanroom.core.odt import empty_odt
from cleanroom.core.sweep import HOME, Place, Reading
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.isolation.checks.token_sweep import (
    ENV_DECODE_BYTES,
    DecodeBudget,
    FormReader,
    read_tree,
)
from cleanroom.tree_scan import scan_tree
from results_md import write_section


def _size(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    return len(files), sum(p.stat().st_size for p in files)


def _programs(home: Path) -> None:
    """Profiles made the way a desktop makes them: each program run once, headless."""
    env = {**os.environ, "HOME": str(home)}
    src = home / "Documents" / "start.odt"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_bytes(empty_odt())
    if shutil.which("soffice"):
        subprocess.run(
            [
                "soffice",
                "--headless",
                "--convert-to",
                "docx",
                "--outdir",
                str(src.parent),
                str(src),
            ],
            env=env,
            timeout=120,
            capture_output=True,
            check=False,
        )
    chromium = shutil.which("chromium")
    if chromium:
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", f"--user-data-dir={home}/.config/chromium",
             "--dump-dom", "data:text/html,<p>hello</p>"],
            env=env,
            timeout=120,
            capture_output=True,
            check=False,
        )  # fmt: skip


def _documents(home: Path) -> None:
    token = str(mint(RolloutId("env02", 1, 1)))
    docs = home / "Documents"
    for i in range(20):
        buf = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(empty_odt())) as src, zipfile.ZipFile(buf, "w") as out:
            for name in src.namelist():
                data = src.read(name)
                if name == "content.xml":
                    para = f"<text:p>report {i} {token} " + "lorem ipsum " * 400 + "</text:p>"
                    data = data.replace(b"<text:p/>", para.encode())
                out.writestr(name, data, zipfile.ZIP_DEFLATED)
        (docs / f"report-{i}.odt").write_bytes(buf.getvalue())
    logs = home / ".local" / "state" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for i in range(10):
        lines = "".join(f"2026-12-07T19:{i:02d}:{j % 60:02d} ok step {j}\n" for j in range(5000))
        (logs / f"run-{i}.log.gz").write_bytes(gzip.compress(lines.encode()))
    (home / ".bash_history").write_text("".join(f"echo step {i}\n" for i in range(2000)))
    blob = base64.b64encode(os.urandom(200_000)).decode()
    (home / ".config" / "state.json").write_text(f'{{"icon": "data:image/png;base64,{blob}"}}')


def realistic(work: Path) -> Path:
    home = work / "home"
    if not home.exists():
        home.mkdir(parents=True)
        _programs(home)
        _documents(home)
    return home


def bombs(work: Path, n: int = 8) -> Path:
    home = work / "bombs"
    if not home.exists():
        home.mkdir(parents=True)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z, z.open("zeros.bin", "w") as f:
            for _ in range(512):
                f.write(b"\x00" * (1 << 20))
        for i in range(n):
            (home / f"bomb-{i}.docx").write_bytes(buf.getvalue())
    return home


def big_base64(work: Path) -> Path:
    home = work / "base64"
    if not home.exists():
        home.mkdir(parents=True)
        (home / "blob.txt").write_bytes(base64.encodebytes(os.urandom(12 << 20)))
    return home


def many_small(work: Path, n: int = 20_000) -> Path:
    home = work / "small"
    if not home.exists():
        for i in range(n):
            folder = home / f"d{i % 100}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{i}.txt").write_bytes(b"key=" + base64.b64encode(os.urandom(48)))
    return home


def _time(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), out


CASES = {
    "realistic home": realistic,
    "8 zip bombs of 512 MiB": bombs,
    "12 MiB of random bytes in base64": big_base64,
    "20,000 small files with base64": many_small,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, default=Path("/tmp/cleanroom-sweep-forms"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--case", choices=list(CASES))
    parser.add_argument("--write", action="store_true", help="add the table to RESULTS.md")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.case is None:  # each case in a process of its own, so its peak RSS is its own
        for make in CASES.values():
            make(args.work)
        header = (
            "| case | files | MB | strict s | sweep s | sweep MB/s | decoded MB | unread | RSS MB |"
        )
        lines = [header, "|" + "---|" * 9]
        print(header)
        for name in CASES:
            argv = [sys.executable, __file__, "--work", str(args.work), "--case", name]
            done = subprocess.run(
                [*argv, "--repeat", str(args.repeat)], check=True, capture_output=True, text=True
            )
            lines.append(done.stdout.strip())
            print(lines[-1])
        if args.write:
            load = " ".join(f"{x:.1f}" for x in os.getloadavg())
            write_section(
                "## Token sweep: every form",
                f"## Token sweep: every form\n\nCommand: `.venv/bin/python bench/sweep_forms.py "
                f"--write` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, load average "
                f"{load}). The sweep's reading of one place (`read_tree`: the strict scan and "
                "every form of `core/token_forms.py`) against the strict scan alone; medians of "
                f"{args.repeat}; RSS is the peak of the case's own process.\n\n" + "\n".join(lines),
            )
        return
    root = CASES[args.case](args.work)
    files, size = _size(root)
    strict, _ = _time(lambda: scan_tree(root), args.repeat)
    place = Place(str(root), ("env02",), HOME)
    budgets: list[DecodeBudget] = []

    def sweep() -> Reading:
        budgets.append(DecodeBudget())
        return read_tree(place, 0.0, budgets[-1])

    scan_tree(root, inspect=FormReader(DecodeBudget()).file)  # compiles the prefilter once
    took, reading = _time(sweep, args.repeat)
    assert isinstance(reading, Reading)
    decoded = ENV_DECODE_BYTES - budgets[-1].left
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"| {args.case} | {files} | {size / 1e6:.1f} | {strict:.3f} | {took:.3f} | "
        f"{size / 1e6 / took:.0f} | {decoded / 1e6:.1f} | {len(reading.unread)} | {rss:.0f} |"
    )


if __name__ == "__main__":
    main()
