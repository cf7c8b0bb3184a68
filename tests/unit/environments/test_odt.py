"""Reading saved Writer documents from the host."""

from __future__ import annotations

import io
import zipfile

import pytest

from cleanroom.core.odt import OdtError, empty_odt, odt_text


def _doc(body: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(
            "content.xml",
            '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:'
            'office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0">'
            f"<office:body><office:text>{body}</office:text></office:body>"
            "</office:document-content>",
        )
    return buf.getvalue()


def test_the_empty_document_has_no_text() -> None:
    assert odt_text(empty_odt()) == ""


def test_repeated_spaces_and_spans_are_restored() -> None:
    body = '<text:p>a<text:s text:c="2"/>b <text:span>c</text:span></text:p><text:p>d</text:p>'
    assert odt_text(_doc(body)) == "a  b c\nd"


def test_a_file_that_is_not_a_document_is_an_error() -> None:
    with pytest.raises(OdtError):
        odt_text(b"not a zip")
