"""A byte buffer that never holds more than its cap: what the harness keeps of a stream
an environment controls (a selection's text, a program's output)."""

from __future__ import annotations


class CappedBuffer:
    """Keeps the first ``cap`` bytes appended to it and counts the rest as dropped."""

    def __init__(self, cap: int) -> None:
        if cap < 0:
            raise ValueError(f"cap must be at least 0, not {cap}")
        self.cap = cap
        self._parts: list[bytes] = []
        self._held = 0
        self.dropped = 0

    @property
    def held(self) -> int:
        """Bytes kept so far."""
        return self._held

    @property
    def full(self) -> bool:
        """Whether the cap is reached: a reader may stop reading."""
        return self._held >= self.cap

    @property
    def truncated(self) -> bool:
        """Whether anything offered was dropped."""
        return self.dropped > 0

    def add(self, chunk: bytes) -> None:
        """Keep what fits of ``chunk`` under the cap; count the rest as dropped."""
        room = self.cap - self._held
        kept = chunk[:room] if room > 0 else b""
        if kept:
            self._parts.append(kept)
            self._held += len(kept)
        self.dropped += len(chunk) - len(kept)

    def mark_dropped(self, count: int) -> None:
        """Count ``count`` bytes that were never read because the cap was reached."""
        self.dropped += max(count, 0)

    def value(self) -> bytes:
        """The kept bytes, in order."""
        return b"".join(self._parts)


class ByteQuota:
    """How much more may be written somewhere that already holds ``used`` bytes, up to
    ``cap``: `take` grants what fits and counts the rest as dropped."""

    def __init__(self, cap: int, used: int = 0) -> None:
        if cap < 0:
            raise ValueError(f"cap must be at least 0, not {cap}")
        self.cap = cap
        self.used = min(max(used, 0), cap)
        self.dropped = 0

    def take(self, n: int) -> int:
        """The bytes of an ``n``-byte write that may go through (the first ones)."""
        granted = max(min(n, self.cap - self.used), 0)
        self.used += granted
        self.dropped += n - granted
        return granted
