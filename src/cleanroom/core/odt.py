"""OpenDocument text: an empty document to start from, and the text of a saved one.

Pure functions over bytes, so the host can read what Writer saved without running
LibreOffice, and a test can check the reading without a desktop.
"""

from __future__ import annotations

import io
import zipfile
from xml.etree import ElementTree as ET

MIME = "application/vnd.oasis.opendocument.text"
_TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_OFFICE_NS = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_T = f"{{{_TEXT_NS}}}"

_CONTENT = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    f'<office:document-content xmlns:office="{_OFFICE_NS}" xmlns:text="{_TEXT_NS}"'
    ' office:version="1.2"><office:body><office:text><text:p/></office:text>'
    "</office:body></office:document-content>"
)
_MANIFEST = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"'
    ' manifest:version="1.2">'
    f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{MIME}"/>'
    '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
    "</manifest:manifest>"
)


class OdtError(ValueError):
    """The bytes are not a readable OpenDocument text file."""


def empty_odt() -> bytes:
    """A minimal valid ODT with one empty paragraph."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        # The mimetype entry must come first and be stored uncompressed.
        z.writestr(zipfile.ZipInfo("mimetype"), MIME, compress_type=zipfile.ZIP_STORED)
        z.writestr("META-INF/manifest.xml", _MANIFEST, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("content.xml", _CONTENT, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def odt_text(data: bytes) -> str:
    """The document's text: one line per paragraph or heading, spaces and tabs restored."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            root = ET.fromstring(z.read("content.xml"))
    except (zipfile.BadZipFile, KeyError, ET.ParseError) as exc:
        raise OdtError(f"not a readable ODT: {exc}") from exc
    lines = [_inline(p) for p in root.iter() if p.tag in (_T + "p", _T + "h")]
    return "\n".join(lines)


def _inline(el: ET.Element) -> str:
    parts = [el.text or ""]
    for child in el:
        if child.tag == _T + "s":
            parts.append(" " * int(child.get(_T + "c", "1")))
        elif child.tag == _T + "tab":
            parts.append("\t")
        elif child.tag == _T + "line-break":
            parts.append("\n")
        elif child.tag not in (_T + "p", _T + "h"):
            parts.append(_inline(child))
        parts.append(child.tail or "")
    return "".join(parts)
