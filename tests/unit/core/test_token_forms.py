"""Every form a token can take, found; every bound, kept and reported."""

from __future__ import annotations

import base64
import binascii
import bz2
import gzip
import io
import lzma
import os
import quopri
import struct
import time
import zipfile
from collections.abc import Callable
from urllib.parse import quote_from_bytes

import pytest

from cleanroom.core.odt import empty_odt
from cleanroom.core.token_forms import (
    ENCODINGS,
    MAX_DEPTH,
    Bound,
    Encoding,
    find_forms,
    worth_decoding,
)

TOKEN = "env03-w001-r0007-9f8e7d6c"
T = TOKEN.encode()
BUDGET = 1 << 20


def _zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _odt_with(text: bytes) -> bytes:
    """An ODT whose content.xml holds ``text`` in a paragraph, as Writer saves one."""
    members = {}
    with zipfile.ZipFile(io.BytesIO(empty_odt())) as z:
        for name in z.namelist():
            members[name] = z.read(name)
    members["content.xml"] = members["content.xml"].replace(
        b"<text:p/>", b"<text:p>" + text + b"</text:p>"
    )
    return _zip(members)


# One deliberate leak per encoding: the token in that form, amid other bytes.
LEAKS: dict[Encoding, Callable[[bytes], bytes]] = {
    Encoding.CASE: lambda t: b"notes: X" + t.upper() + b"\n",
    Encoding.UTF16LE: lambda t: "saved: ".encode("utf-16-le") + t.decode().encode("utf-16-le"),
    Encoding.UTF16BE: lambda t: b"\xfe\xff" + t.decode().encode("utf-16-be"),
    Encoding.BASE64: lambda t: b"data:text/plain;base64," + base64.b64encode(b"x" + t),
    Encoding.HEX: lambda t: b"blob=" + t.hex().encode() + b";",
    Encoding.PERCENT: lambda t: b"q=" + quote_from_bytes(t, safe="").replace("-", "%2D").encode(),
    Encoding.QUOTED_PRINTABLE: lambda t: quopri.encodestring(b"A" * 70 + t),
    Encoding.ENTITIES: lambda t: b"<p>" + b"".join(b"&#%d;" % c for c in t) + b"</p>",
    Encoding.BACKSLASH: lambda t: b'{"v": "' + b"".join(b"\\u%04x" % c for c in t) + b'"}',
    Encoding.MARKUP: lambda t: b"<w:t>" + t[:9] + b"</w:t><w:t>" + t[9:] + b"</w:t>",
    Encoding.GZIP: lambda t: b"log: " + gzip.compress(b"seen " + t),
    Encoding.ZIP: lambda t: _zip({"word/document.xml": b"<w:t>" + t + b"</w:t>"}),
    Encoding.BZIP2: lambda t: bz2.compress(b"x" + t),
    Encoding.XZ: lambda t: lzma.compress(b"x" * 100 + t),
}


def test_every_encoding_the_matcher_knows_has_a_leak_here() -> None:
    assert set(LEAKS) == set(ENCODINGS)


@pytest.mark.parametrize("encoding", list(LEAKS), ids=str)
def test_a_token_in_each_encoding_is_found_and_named(encoding: Encoding) -> None:
    data = LEAKS[encoding](T)
    assert T not in data  # the strict scanner would not see it
    forms = find_forms(data, BUDGET)
    found = {(str(h.token), e) for h in forms.hits if h.layers for e in h.layers[0].encodings}
    assert (TOKEN, encoding) in found, forms.hits
    assert forms.unread == []


@pytest.mark.parametrize("shift", [0, 1, 2])
@pytest.mark.parametrize(
    "encode",
    [base64.b64encode, base64.urlsafe_b64encode, base64.encodebytes],
    ids=lambda f: f.__name__,
)
def test_base64_at_every_alignment_standard_url_safe_and_wrapped(
    shift: int, encode: Callable[[bytes], bytes]
) -> None:
    data = encode(b"\xfb\xff"[:shift] + b"\xff" * 40 + T + b"\xfe")
    assert {str(h.token) for h in find_forms(data, BUDGET).hits} == {TOKEN}


def test_a_token_glued_to_words_on_both_sides_is_found_whole() -> None:
    forms = find_forms(b"x" + T + b"0tail", BUDGET)
    assert [str(h.token) for h in forms.hits] == [TOKEN]


def test_a_token_in_a_saved_odt_is_found_in_its_content() -> None:
    forms = find_forms(_odt_with(T), BUDGET)
    layers = [h.form for h in forms.hits if str(h.token) == TOKEN]
    assert layers and layers[0].startswith("zip:content.xml"), forms.hits


def test_layers_nest_a_gzip_stream_in_base64_in_a_zip_member() -> None:
    inner = base64.b64encode(gzip.compress(T))
    forms = find_forms(_zip({"payload.json": b'{"b": "' + inner + b'"}'}), BUDGET)
    assert [h.form for h in forms.hits] == ["zip:payload.json > base64 > gzip"]


def test_a_corrupt_stream_still_gives_what_it_decoded_before_the_damage() -> None:
    stream = gzip.compress(T + os.urandom(4096))
    forms = find_forms(stream[:-600] + b"\x00" * 50, BUDGET)
    assert TOKEN in {str(h.token) for h in forms.hits}


def test_a_zip_bomb_costs_at_most_the_budget_and_says_what_it_left() -> None:
    bomb = _zip({"zeros.bin": b"\x00" * (64 << 20), "late.txt": T})
    assert len(bomb) < 100_000
    started = time.monotonic()
    forms = find_forms(bomb, 8 << 20)
    assert time.monotonic() - started < 5
    assert forms.decoded <= 8 << 20
    cut = [u for u in forms.unread if u.bound is Bound.FILE_BYTES]
    assert cut and cut[0].layers[0].name == "zeros.bin"


def test_the_budget_is_named_as_the_caller_says() -> None:
    forms = find_forms(gzip.compress(b"\x00" * (1 << 20)), 1000, bound=Bound.ENV_BYTES)
    assert [u.bound for u in forms.unread] == [Bound.ENV_BYTES]


def test_layers_nested_past_the_depth_are_reported_not_read() -> None:
    data = T
    for _ in range(MAX_DEPTH + 1):
        # Padding that compresses well, so no layer keeps the one inside it verbatim.
        data = gzip.compress(b" " * 4096 + data + b" " * 4096)
    forms = find_forms(data, BUDGET)
    assert forms.hits == []
    assert [u.bound for u in forms.unread] == [Bound.DEPTH]
    assert len(forms.unread[0].layers) == MAX_DEPTH + 1


def test_past_the_deadline_nothing_more_is_decoded_and_that_is_reported() -> None:
    forms = find_forms(LEAKS[Encoding.GZIP](T), BUDGET, deadline=10.0, clock=lambda: 11.0)
    assert forms.hits == [] and forms.decoded == 0
    assert [u.bound for u in forms.unread] == [Bound.DEADLINE]


def test_a_member_the_matcher_cannot_decompress_is_reported() -> None:
    bzipped = _zip({"a.xml": T}, zipfile.ZIP_BZIP2)
    forms = find_forms(bzipped, BUDGET)
    assert [(u.bound, u.layers[0].name) for u in forms.unread] == [(Bound.UNSUPPORTED, "a.xml")]


def test_an_encrypted_member_is_reported() -> None:
    header = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 1, 8, 0, 0, 0, 10, 10, 5, 0)
    forms = find_forms(header + b"a.txt" + os.urandom(10), BUDGET)
    assert [(u.bound, u.detail) for u in forms.unread] == [(Bound.UNSUPPORTED, "encrypted")]


def test_near_misses_and_random_bytes_hold_no_token() -> None:
    near = b"env1-w001-r0001-deadbeef env01-w01-r0001-deadbeef env01-w001-r001-deadbeef "
    near += b"env01-w001-r0001-deadbee env01_w001_r0001_deadbeef"
    noise = os.urandom(1 << 20)
    forms = find_forms(near + noise + base64.b64encode(noise[:4096]), BUDGET * 8)
    assert forms.hits == []


def test_hex_of_a_token_in_either_case_and_at_an_odd_start() -> None:
    data = b"a" + binascii.hexlify(T).upper()
    assert [str(h.token) for h in find_forms(data, BUDGET).hits] == [TOKEN]


def test_plain_forms_cost_no_budget() -> None:
    forms = find_forms(T.upper() + TOKEN.encode("utf-16-le"), 0)
    assert len(forms.hits) == 2 and forms.decoded == 0 and forms.unread == []


@pytest.mark.parametrize("encoding", list(LEAKS), ids=str)
def test_the_prefilter_passes_every_leak(encoding: Encoding) -> None:
    assert worth_decoding(LEAKS[encoding](T))


def test_the_prefilter_passes_over_bytes_with_nothing_to_decode() -> None:
    assert not worth_decoding(b"The quick brown fox jumps over the lazy dog.\n" * 1000)
    assert not worth_decoding(bytes(range(256)) * 16)
