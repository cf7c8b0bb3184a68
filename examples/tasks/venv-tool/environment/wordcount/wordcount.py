"""Counts the words of a file."""

import sys


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        print(len(fh.read().split()))
