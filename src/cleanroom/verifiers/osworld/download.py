"""Fetching task files over HTTP(S), with a time limit and a named error."""

from __future__ import annotations

import httpx


class DownloadError(Exception):
    """A URL could not be fetched; carries the URL and why."""

    def __init__(self, url: str, why: str) -> None:
        self.url = url
        self.why = why
        super().__init__(f"download of {url} failed: {why}")


def fetch(url: str, *, timeout: float, tries: int = 1) -> bytes:
    """The body of ``url`` (redirects followed); `DownloadError` after ``tries`` failures."""
    why = "no attempt made"
    for _ in range(max(tries, 1)):
        try:
            response = httpx.get(url, timeout=timeout, follow_redirects=True)
        except httpx.HTTPError as exc:
            why = f"{type(exc).__name__}: {exc}"
            continue
        if response.status_code == 200:
            return response.content
        why = f"HTTP {response.status_code}"
    raise DownloadError(url, why)
