"""git's configuration file syntax, read the way git reads it, from bytes the agent left.

The verifier never runs git on the agent's files to learn what they configure: the
question is what git *would* do with them. So this is a small parser of the syntax
git-config(1) describes, following git's own reader character by character:

- ``[section]``, ``[section "subsection"]`` (the subsection's case kept, ``\\"`` and
  ``\\\\`` escaped) and the older ``[section.subsection]``; a header may share its line
  with a setting;
- ``name = value`` (a name alone is boolean true), names and sections compared without
  case; ``#`` and ``;`` start a comment outside quotes;
- values with double-quoted parts, the escapes ``\\n``, ``\\t``, ``\\b``, ``\\"``,
  ``\\\\``, and a backslash at the end of a line continuing the value; blanks around a
  value dropped, blanks inside kept.

What git would refuse (an unknown escape, an unterminated quote or header, a NUL
byte) is `MalformedConfig`: the caller decides what a file git
cannot read means. The input is bounded by the caller; the parser keeps nothing but the
settings found.
"""

from __future__ import annotations

from dataclasses import dataclass

_BOM = b"\xef\xbb\xbf"
# git's own isspace: a vertical tab or a form feed is part of a value to git.
_SPACE = frozenset(b" \t\n\r")
_ESCAPES = {ord("n"): "\n", ord("t"): "\t", ord("b"): "\b", ord('"'): '"', ord("\\"): "\\"}


class MalformedConfig(ValueError):
    """Bytes git would refuse to read as a configuration file; says where."""


@dataclass(frozen=True)
class Setting:
    """One ``section[.subsection].name`` setting: section and name in lower case, the
    subsection as written; ``value`` None for a name alone (git's boolean true)."""

    section: str
    subsection: str | None
    name: str
    value: str | None

    @property
    def key(self) -> str:
        """The key as ``git config`` names it (``filter.answer.clean``)."""
        middle = f".{self.subsection}" if self.subsection is not None else ""
        return f"{self.section}{middle}.{self.name}"


def parse(data: bytes) -> list[Setting]:
    """Every setting of a configuration file, in order; `MalformedConfig` for what git
    would refuse."""
    return _Reader(data).settings()


def maybe_bool(value: str | None) -> bool | None:
    """A value as git reads a boolean: True, False, or None when it is not one. Only
    spellings git reads as booleans are: anything else (``0x0``, ``false\v``) is None,
    as a value git would take for something else (a path, a command) must be."""
    if value is None:
        return True
    lowered = value.lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0", ""):
        return False
    return None


class _Reader:
    """git's reader: one byte at a time, ``\\r\\n`` read as ``\\n``, the end of the
    data read as the end of a line."""

    def __init__(self, data: bytes) -> None:
        if b"\0" in data:
            raise MalformedConfig("a NUL byte")
        self.data = data[len(_BOM) :] if data.startswith(_BOM) else data
        self.pos = 0
        self.line = 1
        self.section: tuple[str, str | None] | None = None

    def settings(self) -> list[Setting]:
        found: list[Setting] = []
        comment = False
        while True:
            c = self._next()
            if c is None:
                return found
            if c == ord("\n"):
                comment = False
                continue
            if comment or c in _SPACE:
                continue
            if c in (ord("#"), ord(";")):
                comment = True
            elif c == ord("["):
                self.section = self._header()
            elif chr(c).isascii() and chr(c).isalpha():
                setting = self._setting(c)
                # git reads a name before any section too, as a key no setting has.
                if setting.section:
                    found.append(setting)
            else:
                raise self._error(f"unexpected {chr(c)!r}")

    def _next(self) -> int | None:
        if self.pos >= len(self.data):
            return None
        c = self.data[self.pos]
        self.pos += 1
        if c == ord("\r") and self.data[self.pos : self.pos + 1] == b"\n":
            c = ord("\n")
            self.pos += 1
        if c == ord("\n"):
            self.line += 1
        return c

    def _error(self, what: str) -> MalformedConfig:
        return MalformedConfig(f"line {self.line}: {what}")

    def _header(self) -> tuple[str, str | None]:
        name = bytearray()
        while True:
            c = self._next()
            if c is None or c == ord("\n"):
                raise self._error("a section header is not closed")
            if c == ord("]"):
                break
            if c in _SPACE:
                return self._extended(name.decode("ascii").lower())
            if not _key_char(c) and c != ord("."):
                raise self._error(f"{chr(c)!r} in a section name")
            name.append(c)
        section = name.decode("ascii").lower()
        if not section:
            raise self._error("an empty section name")
        # The older [section.subsection]: git keeps the whole as the key's prefix, so the
        # part after the first dot reads as a subsection (in lower case).
        head, dot, tail = section.partition(".")
        return (head, tail) if dot else (section, None)

    def _extended(self, section: str) -> tuple[str, str | None]:
        if not section:
            raise self._error("an empty section name")
        c = self._next()
        while c is not None and c in _SPACE and c != ord("\n"):
            c = self._next()
        if c != ord('"'):
            raise self._error("a subsection is not quoted")
        sub = bytearray()
        while True:
            c = self._next()
            if c is None or c == ord("\n"):
                raise self._error("a subsection is not closed")
            if c == ord('"'):
                break
            if c == ord("\\"):
                c = self._next()
                if c is None or c == ord("\n"):
                    raise self._error("a subsection is not closed")
            sub.append(c)
        if self._next() != ord("]"):
            raise self._error("a section header is not closed")
        return section, sub.decode("utf-8", "surrogateescape")

    def _setting(self, first: int) -> Setting:
        name = bytearray([first])
        c = self._next()
        while c is not None and _key_char(c):
            name.append(c)
            c = self._next()
        while c in (ord(" "), ord("\t")):
            c = self._next()
        value: str | None = None
        if c is not None and c != ord("\n"):
            if c != ord("="):
                raise self._error(f"{chr(c)!r} after the name {name.decode('ascii')!r}")
            value = self._value()
        section, sub = self.section or ("", None)
        return Setting(section, sub, name.decode("ascii").lower(), value)

    def _value(self) -> str:
        out = bytearray()
        quote = comment = False
        spaces = 0
        while True:
            c = self._next()
            if c is None or c == ord("\n"):
                if quote:
                    raise self._error("a quoted value is not closed")
                return out.decode("utf-8", "surrogateescape")
            if comment:
                continue
            if c in _SPACE and not quote:
                if out:
                    spaces += 1
                continue
            if not quote and c in (ord("#"), ord(";")):
                comment = True
                continue
            out.extend(b" " * spaces)
            spaces = 0
            if c == ord("\\"):
                c = self._next()
                if c == ord("\n"):
                    continue  # the value goes on on the next line
                if c is None or c not in _ESCAPES:
                    raise self._error("an unknown escape in a value")
                out.extend(_ESCAPES[c].encode())
            elif c == ord('"'):
                quote = not quote
            else:
                out.append(c)


def _key_char(c: int) -> bool:
    ch = chr(c)
    return ch.isascii() and (ch.isalnum() or ch == "-")
