"""Token scan throughput over a generated 1 GB tree, against ripgrep in the same run.

    .venv/bin/python bench/token_scan.py [--size-mb 1024] [--repeat 5] [--tree DIR]

Generates (once, then reuses) a tree of text-like files with tokens planted in one file
in ten and near-miss decoys everywhere, checks that cleanroom's scanner finds exactly the
planted tokens, then times it against ripgrep (Debian ``ripgrep``) searching the same
token pattern over the same tree, both with a warm page cache. Prints MB/s for each and
the ratio; ``--write`` adds the figures to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cleanroom.core.tokens import RolloutId, mint
from cleanroom.tree_scan import scan_tree
from results_md import write_section

HERE = Path(__file__).resolve().parent
RG_PATTERN = r"env[0-9]{2,3}-w[0-9]{3,6}-r[0-9]{4,8}-[0-9a-f]{8}"


def corpus(rng: random.Random, size: int) -> bytes:
    """Text that looks like logs and documents, with decoys that share the token's prefix."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(2, 11))) for _ in range(4000)]
    words += [
        "env",
        "environment",
        "envelope",
        "env01",
        "env01-w001",
        "w001-r0001",
        "deadbeef",
        "env02-w003-r0004-abc",
        "ENV01-W001-R0001-DEADBEEF",
        "2026-11-29T19:00:00Z",
    ]
    out: list[str] = []
    n = 0
    while n < size:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(4, 16))) + "\n"
        out.append(line)
        n += len(line)
    return "".join(out).encode()[:size]


def generate(root: Path, size_mb: int, seed: int = 11) -> dict[str, str]:
    """Write the tree; return the planted tokens and the files that hold them."""
    manifest = root / "manifest.json"
    if manifest.exists():
        data = json.loads(manifest.read_text())
        if data["size_mb"] == size_mb:
            return dict(data["planted"])
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(seed)
    text = corpus(rng, 16 << 20)
    files = root / "files"
    planted: dict[str, str] = {}
    written, i = 0, 0
    target = size_mb << 20
    while written < target:
        size = min(int(rng.lognormvariate(11.0, 1.2)) + 64, 4 << 20, target - written)
        start = rng.randrange(0, len(text) - size)
        body = text[start : start + size]
        path = files / f"d{i % 64:02d}" / f"s{i % 7}" / f"f{i:06d}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        if i % 10 == 0:
            token = str(mint(RolloutId(f"env{i % 12:02d}", i % 50, i)))
            cut = rng.randrange(0, len(body) + 1)
            body = body[:cut] + b" " + token.encode() + b" " + body[cut:]
            planted[token] = str(path)
        path.write_bytes(body)
        written += len(body)
        i += 1
    manifest.write_text(json.dumps({"size_mb": size_mb, "planted": planted}))
    return planted


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in (root / "files").rglob("*") if p.is_file())


def cpu_seconds() -> tuple[float, float]:
    """User and system CPU time used so far by this process and its finished children."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + kids.ru_utime, me.ru_stime + kids.ru_stime


class Timed:
    """Wall time and the CPU time (user, system) spent inside a ``with`` block."""

    def __enter__(self) -> Timed:
        self._t, self._cpu = time.perf_counter(), cpu_seconds()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._t
        user, system = cpu_seconds()
        self.user, self.system = user - self._cpu[0], system - self._cpu[1]


def time_cleanroom(root: Path) -> tuple[Timed, int]:
    with Timed() as t:
        hits = scan_tree(root / "files").hits
    return t, len(hits)


def time_ripgrep(root: Path, threads: int | None) -> tuple[Timed, int]:
    cmd = [
        "rg",
        "--no-config",
        "-a",
        "--no-ignore",
        "--hidden",
        "--count-matches",
        "-e",
        RG_PATTERN,
        str(root / "files"),
    ]
    if threads:
        cmd[1:1] = ["-j", str(threads)]
    with Timed() as t:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode not in (0, 1):
        raise SystemExit(f"ripgrep failed: {out.stderr}")
    count = sum(int(line.rsplit(":", 1)[1]) for line in out.stdout.splitlines())
    return t, count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--note", default="", help="a paragraph added under the figures")
    ap.add_argument("--tree", type=Path, default=HERE / "out" / "token-tree")
    ap.add_argument("--write", action="store_true", help="add the figures to bench/RESULTS.md")
    args = ap.parse_args()
    if not shutil.which("rg"):
        raise SystemExit("ripgrep is missing: apt-get install -y ripgrep")

    planted = generate(args.tree, args.size_mb)
    total = tree_bytes(args.tree)
    mb = total / 1e6

    # Correctness first: exactly the planted tokens, nothing else.
    found = {str(h.token): h.source for h in scan_tree(args.tree / "files").hits}
    if found != planted:
        raise SystemExit(
            f"scanner disagrees with the plant: {len(found)} found, {len(planted)} planted"
        )
    time_ripgrep(args.tree, None)  # warm the page cache

    # Turns alternate, so drift in the machine's load reaches every scanner alike.
    runs: dict[str, list[Timed]] = {"cleanroom": [], "ripgrep": [], "ripgrep -j1": []}
    loads = []
    for _ in range(args.repeat):
        loads.append(" ".join(f"{x:.2f}" for x in os.getloadavg()))
        t, n = time_cleanroom(args.tree)
        assert n == len(planted)
        runs["cleanroom"].append(t)
        t, n = time_ripgrep(args.tree, None)
        assert n == len(planted), n
        runs["ripgrep"].append(t)
        t, _ = time_ripgrep(args.tree, 1)
        runs["ripgrep -j1"].append(t)

    med = {k: statistics.median(t.wall for t in v) for k, v in runs.items()}
    user = {k: statistics.median(t.user for t in v) for k, v in runs.items()}
    system = {k: statistics.median(t.system for t in v) for k, v in runs.items()}
    rate = {k: mb / v for k, v in med.items()}
    # The ratio of each turn, cleanroom against the ripgrep run right after it.
    turns = [r.wall / c.wall for c, r in zip(runs["cleanroom"], runs["ripgrep"], strict=True)]
    files = sum(1 for p in (args.tree / "files").rglob("*") if p.is_file())
    print(f"tree: {mb:.0f} MB in {files} files, {len(planted)} planted tokens (all found)")
    for k in runs:
        print(
            f"{k:>12}: median {med[k]:.3f} s  {rate[k]:8.0f} MB/s"
            f"  cpu user {user[k]:.3f} s system {system[k]:.3f} s"
        )
    ratio = rate["cleanroom"] / rate["ripgrep"]
    print(f"ratio cleanroom / ripgrep: {ratio:.2f} (aim: at least 1.00); per turn: {turns}")
    print(f"ratio cleanroom / ripgrep -j1: {rate['cleanroom'] / rate['ripgrep -j1']:.2f}")
    print(f"load averages: {loads}")

    if args.write:
        rg_version = subprocess.run(["rg", "--version"], capture_output=True, text=True).stdout
        section = (
            "## Token scan\n\n"
            "Command: `.venv/bin/python bench/token_scan.py --write` "
            f"({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, Linux {platform.release()}, "
            f"Python {sys.version.split()[0]}, {rg_version.splitlines()[0]}).\n\n"
            f"Tree: {mb:.0f} MB of text-like files in {files} files, {len(planted)} planted "
            f"tokens; page cache warm; {args.repeat} turns, each running the three scanners "
            "one after the other; medians. Load average (1, 5, 15 min) at the start of each "
            f"turn: {'; '.join(loads)} ({os.cpu_count()} cores: a load above that means other "
            "work shared the cores). CPU is user and system time of the scanner's processes.\n\n"
            "| scanner | median s | MB/s | ratio to ripgrep | CPU user s | CPU system s |\n"
            "|---|---|---|---|---|---|\n"
            + "".join(
                f"| {k} | {med[k]:.3f} | {rate[k]:.0f} | {rate[k] / rate['ripgrep']:.2f} "
                f"| {user[k]:.3f} | {system[k]:.3f} |\n"
                for k in runs
            )
            + f"\nAim: at least ripgrep's speed (1.00). Measured: **{ratio:.2f}** (per turn: "
            + ", ".join(f"{x:.2f}" for x in turns)
            + ").\n"
            + ("\n" + args.note + "\n" if args.note else "")
        )
        write_section("## Token scan", section)


if __name__ == "__main__":
    main()
