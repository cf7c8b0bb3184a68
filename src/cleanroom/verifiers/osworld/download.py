"""Fetching task files over HTTP(S), with a time limit, a size cap and a named error."""

from __future__ import annotations

import httpx

# The most a task file may be: OSWorld's largest are videos and app profiles of tens of MB.
TASK_FILE_CAP_BYTES = 1 << 30


class DownloadError(Exception):
    """A URL could not be fetched; carries the URL and why."""

    def __init__(self, url: str, why: str) -> None:
        self.url = url
        self.why = why
        super().__init__(f"download of {url} failed: {why}")


class _OverCap(Exception):
    pass


def fetch(url: str, *, timeout: float, tries: int = 1, cap: int = TASK_FILE_CAP_BYTES) -> bytes:
    """The body of ``url`` (redirects followed), at most ``cap`` bytes; `DownloadError`
    after ``tries`` failures, or at once for a body over ``cap``."""
    why = "no attempt made"
    for _ in range(max(tries, 1)):
        try:
            with httpx.stream("GET", url, timeout=timeout, follow_redirects=True) as response:
                if response.status_code == 200:
                    return _body(response, cap)
                why = f"HTTP {response.status_code}"
        except _OverCap:
            raise DownloadError(url, f"the file is over {cap} bytes") from None
        except httpx.HTTPError as exc:
            why = f"{type(exc).__name__}: {exc}"
    raise DownloadError(url, why)


def _body(response: httpx.Response, cap: int) -> bytes:
    """The body read in chunks, stopped as soon as it passes ``cap``."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > cap:
            raise _OverCap
        chunks.append(chunk)
    return b"".join(chunks)
