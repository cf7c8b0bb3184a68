"""Files made here in place of OSWorld's dataset files, for a mirror with no network (pure).

A task's files come from OSWorld's dataset (`mirror.DATASET_URL`). Where it cannot be
reached, `made_file` makes, for a dataset path, a small file of the kind its name says
(a spreadsheet, a document, a slide deck, a PDF, an image, a sound, a video container,
an archive, a script, a text), its content drawn from a seed of the URL: two URLs give
two different files, so a task's starting file differs from its expected one, and the
same URL always gives the same bytes. A name of no kind made here (``.bin``, ``.xls``)
gets seeded bytes.

Made files are not OSWorld's: a checker that compares the agent's file with an expected
one sees a made pair, and one that reads particular cells, slides or words finds made
ones. The files let a task's setup, its getters and its metric run end to end; they do
not reproduce the task.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import lzma
import math
import random
import struct
import tarfile
import wave
import zipfile
from collections.abc import Callable
from xml.sax.saxutils import escape

from PIL import Image, ImageDraw

WORDS = (
    "apple",
    "river",
    "stone",
    "cloud",
    "maple",
    "harbor",
    "copper",
    "meadow",
    "lantern",
    "violet",
    "orbit",
    "canyon",
    "pepper",
    "marble",
    "summit",
    "willow",
    "ember",
    "falcon",
    "garnet",
    "island",
    "jasper",
    "kettle",
    "lemon",
    "mango",
    "nectar",
    "olive",
    "prism",
    "quartz",
    "raven",
    "saffron",
    "tundra",
    "umber",
    "velvet",
    "walnut",
    "yarrow",
    "zephyr",
)

_PARAGRAPHS = 3
_ROWS = 6
_IMAGE_SIZE = (96, 64)


class Seeded:
    """The seeded draws of one file: words, numbers, colours, bytes (all from its URL)."""

    def __init__(self, url: str) -> None:
        self.digest = hashlib.sha256(url.encode("utf-8")).hexdigest()
        self.rng = random.Random(self.digest)

    def words(self, n: int) -> str:
        """``n`` words, the first capitalised."""
        text = " ".join(self.rng.choice(WORDS) for _ in range(n))
        return text[:1].upper() + text[1:]

    def number(self) -> int:
        """A whole number from 1 to 999."""
        return self.rng.randint(1, 999)

    def colour(self) -> tuple[int, int, int]:
        """An RGB colour."""
        return (self.rng.randrange(256), self.rng.randrange(256), self.rng.randrange(256))

    def lines(self) -> list[str]:
        """A few lines of words, the first naming the file's seed."""
        return [f"Made file {self.digest[:12]}"] + [self.words(6) + "." for _ in range(_PARAGRAPHS)]

    def table(self) -> list[list[str | int]]:
        """A header row and a few rows of a word and two numbers."""
        rows: list[list[str | int]] = [["Name", "Amount", "Count"]]
        rows += [[self.words(1), self.number(), self.number()] for _ in range(_ROWS)]
        return rows


def _zip(parts: dict[str, str | bytes], first_stored: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        if first_stored is not None:  # OpenDocument's mimetype: first, uncompressed
            info = zipfile.ZipInfo(first_stored, date_time=(2024, 1, 1, 0, 0, 0))
            z.writestr(info, parts[first_stored], compress_type=zipfile.ZIP_STORED)
        for name, data in parts.items():
            if name != first_stored:
                info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
                z.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_PKG_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_DOC_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_OFFICE_DOCUMENT = _DOC_RELS + "/officeDocument"
_OOXML_TYPE = "application/vnd.openxmlformats-officedocument."


def _content_types(overrides: dict[str, str]) -> str:
    items = "".join(
        f'<Override PartName="{part}" ContentType="{_OOXML_TYPE}{kind}"/>'
        for part, kind in overrides.items()
    )
    return (
        _XML + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
        f"{items}</Types>"
    )


def _rels(targets: list[tuple[str, str]]) -> str:
    items = "".join(
        f'<Relationship Id="rId{n}" Type="{kind}" Target="{target}"/>'
        for n, (kind, target) in enumerate(targets, start=1)
    )
    return _XML + f'<Relationships xmlns="{_PKG_RELS}">{items}</Relationships>'


def _sheet_xml(rows: list[list[str | int]]) -> str:
    xml_rows = []
    for r, row in enumerate(rows, start=1):
        cells = []
        for c, value in enumerate(row):
            ref = f"{'ABC'[c]}{r}"
            if isinstance(value, int):
                cells.append(f'<c r="{ref}"><v>{value}</v></c>')
            else:
                cells.append(f'<c r="{ref}" t="inlineStr"><is><t>{escape(value)}</t></is></c>')
        xml_rows.append(f'<row r="{r}">{"".join(cells)}</row>')
    return (
        _XML + f'<worksheet xmlns="{_SML}"><sheetData>{"".join(xml_rows)}</sheetData></worksheet>'
    )


_SML = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
# Checkers name sheets by their default names and compare the second and third too.
SHEETS = ("Sheet1", "Sheet2", "Sheet3")


def make_xlsx(seed: Seeded) -> bytes:
    """A workbook of three sheets, ``Sheet1`` to ``Sheet3``, each a header row, then words
    and numbers."""
    sheets = "".join(
        f'<sheet name="{name}" sheetId="{n}" r:id="rId{n}"/>'
        for n, name in enumerate(SHEETS, start=1)
    )
    workbook = (
        _XML
        + f'<workbook xmlns="{_SML}" xmlns:r="{_DOC_RELS}"><sheets>{sheets}</sheets></workbook>'
    )
    parts: dict[str, str | bytes] = {
        "[Content_Types].xml": _content_types(
            {
                "/xl/workbook.xml": "spreadsheetml.sheet.main+xml",
                **{
                    f"/xl/worksheets/sheet{n}.xml": "spreadsheetml.worksheet+xml"
                    for n in range(1, len(SHEETS) + 1)
                },
            }
        ),
        "_rels/.rels": _rels([(_OFFICE_DOCUMENT, "xl/workbook.xml")]),
        "xl/workbook.xml": workbook,
        "xl/_rels/workbook.xml.rels": _rels(
            [
                (_DOC_RELS + "/worksheet", f"worksheets/sheet{n}.xml")
                for n in range(1, len(SHEETS) + 1)
            ]
        ),
    }
    for n in range(1, len(SHEETS) + 1):
        parts[f"xl/worksheets/sheet{n}.xml"] = _sheet_xml(seed.table())
    return _zip(parts)


def make_docx(seed: Seeded) -> bytes:
    """A Word document of a few paragraphs and a table of words and numbers (a checker
    that compares tables must find two tables that differ, not two without any)."""
    main = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    paragraphs = "".join(
        f"<w:p><w:r><w:t>{escape(line)}</w:t></w:r></w:p>" for line in seed.lines()
    )
    rows = "".join(
        "<w:tr>"
        + "".join(f"<w:tc><w:p><w:r><w:t>{escape(str(v))}</w:t></w:r></w:p></w:tc>" for v in row)
        + "</w:tr>"
        for row in seed.table()
    )
    grid = '<w:gridCol w:w="2400"/>' * len(seed.table()[0])  # the columns readers count
    table = f"<w:tbl><w:tblPr/><w:tblGrid>{grid}</w:tblGrid>{rows}</w:tbl><w:p/>"
    body = paragraphs + table
    document = _XML + f'<w:document xmlns:w="{main}"><w:body>{body}</w:body></w:document>'
    return _zip(
        {
            "[Content_Types].xml": _content_types(
                {"/word/document.xml": "wordprocessingml.document.main+xml"}
            ),
            "_rels/.rels": _rels([(_OFFICE_DOCUMENT, "word/document.xml")]),
            "word/document.xml": document,
        }
    )


_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_EMPTY_TREE = (
    '<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'
)
_CLR_MAP = (
    '<p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2"'
    ' accent3="accent3" accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink"'
    ' folHlink="folHlink"/>'
)


def _theme() -> str:
    colours = "".join(
        f"<a:{name}><a:srgbClr val='{value}'/></a:{name}>"
        for name, value in (
            ("dk1", "000000"),
            ("lt1", "FFFFFF"),
            ("dk2", "1F497D"),
            ("lt2", "EEECE1"),
            ("accent1", "4F81BD"),
            ("accent2", "C0504D"),
            ("accent3", "9BBB59"),
            ("accent4", "8064A2"),
            ("accent5", "4BACC6"),
            ("accent6", "F79646"),
            ("hlink", "0000FF"),
            ("folHlink", "800080"),
        )
    )
    fill = "<a:solidFill><a:schemeClr val='phClr'/></a:solidFill>"
    line = f"<a:ln w='9525'>{fill}</a:ln>"
    effect = "<a:effectStyle><a:effectLst/></a:effectStyle>"
    fonts = "<a:latin typeface='Calibri'/><a:ea typeface=''/><a:cs typeface=''/>"
    return (
        _XML + f"<a:theme xmlns:a='{_A}' name='Made'><a:themeElements>"
        f"<a:clrScheme name='Made'>{colours}</a:clrScheme>"
        f"<a:fontScheme name='Made'><a:majorFont>{fonts}</a:majorFont>"
        f"<a:minorFont>{fonts}</a:minorFont></a:fontScheme>"
        f"<a:fmtScheme name='Made'><a:fillStyleLst>{fill * 3}</a:fillStyleLst>"
        f"<a:lnStyleLst>{line * 3}</a:lnStyleLst>"
        f"<a:effectStyleLst>{effect * 3}</a:effectStyleLst>"
        f"<a:bgFillStyleLst>{fill * 3}</a:bgFillStyleLst></a:fmtScheme>"
        "</a:themeElements></a:theme>"
    )


def make_pptx(seed: Seeded) -> bytes:
    """A slide deck of one slide holding a text box of a few lines."""
    paragraphs = "".join(
        f"<a:p><a:r><a:t>{escape(line)}</a:t></a:r></a:p>" for line in seed.lines()
    )
    text_box = (
        '<p:sp><p:nvSpPr><p:cNvPr id="2" name="Text 1"/><p:cNvSpPr txBox="1"/><p:nvPr/>'
        '</p:nvSpPr><p:spPr><a:xfrm><a:off x="457200" y="457200"/>'
        '<a:ext cx="8229600" cy="1828800"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/>'
        f"</a:prstGeom></p:spPr><p:txBody><a:bodyPr/><a:lstStyle/>{paragraphs}</p:txBody></p:sp>"
    )
    ns = f'xmlns:a="{_A}" xmlns:r="{_DOC_RELS}" xmlns:p="{_P}"'
    slide = (
        _XML + f"<p:sld {ns}><p:cSld><p:spTree>{_EMPTY_TREE}{text_box}</p:spTree></p:cSld></p:sld>"
    )
    layout = (
        _XML + f'<p:sldLayout {ns} type="blank"><p:cSld name="Blank"><p:spTree>{_EMPTY_TREE}'
        "</p:spTree></p:cSld></p:sldLayout>"
    )
    master = (
        _XML + f"<p:sldMaster {ns}><p:cSld><p:spTree>{_EMPTY_TREE}</p:spTree></p:cSld>"
        f'{_CLR_MAP}<p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/>'
        "</p:sldLayoutIdLst></p:sldMaster>"
    )
    presentation = (
        _XML + f'<p:presentation {ns}><p:sldMasterIdLst><p:sldMasterId id="2147483648"'
        ' r:id="rId1"/></p:sldMasterIdLst><p:sldIdLst><p:sldId id="256" r:id="rId2"/>'
        '</p:sldIdLst><p:sldSz cx="9144000" cy="6858000"/><p:notesSz cx="6858000"'
        ' cy="9144000"/></p:presentation>'
    )
    pml = "presentationml."
    return _zip(
        {
            "[Content_Types].xml": _content_types(
                {
                    "/ppt/presentation.xml": pml + "presentation.main+xml",
                    "/ppt/slideMasters/slideMaster1.xml": pml + "slideMaster+xml",
                    "/ppt/slideLayouts/slideLayout1.xml": pml + "slideLayout+xml",
                    "/ppt/slides/slide1.xml": pml + "slide+xml",
                    "/ppt/theme/theme1.xml": "theme+xml",
                }
            ),
            "_rels/.rels": _rels([(_OFFICE_DOCUMENT, "ppt/presentation.xml")]),
            "ppt/presentation.xml": presentation,
            "ppt/_rels/presentation.xml.rels": _rels(
                [
                    (_DOC_RELS + "/slideMaster", "slideMasters/slideMaster1.xml"),
                    (_DOC_RELS + "/slide", "slides/slide1.xml"),
                    (_DOC_RELS + "/theme", "theme/theme1.xml"),
                ]
            ),
            "ppt/slideMasters/slideMaster1.xml": master,
            "ppt/slideMasters/_rels/slideMaster1.xml.rels": _rels(
                [
                    (_DOC_RELS + "/slideLayout", "../slideLayouts/slideLayout1.xml"),
                    (_DOC_RELS + "/theme", "../theme/theme1.xml"),
                ]
            ),
            "ppt/slideLayouts/slideLayout1.xml": layout,
            "ppt/slideLayouts/_rels/slideLayout1.xml.rels": _rels(
                [(_DOC_RELS + "/slideMaster", "../slideMasters/slideMaster1.xml")]
            ),
            "ppt/slides/slide1.xml": slide,
            "ppt/slides/_rels/slide1.xml.rels": _rels(
                [(_DOC_RELS + "/slideLayout", "../slideLayouts/slideLayout1.xml")]
            ),
            "ppt/theme/theme1.xml": _theme(),
        }
    )


_ODF_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_ODF_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_ODF_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"


def _odf(mime: str, body: str) -> bytes:
    content = (
        _XML + f'<office:document-content xmlns:office="{_ODF_OFFICE}" xmlns:text="{_ODF_TEXT}"'
        f' xmlns:table="{_ODF_TABLE}" office:version="1.2"><office:body>{body}</office:body>'
        "</office:document-content>"
    )
    manifest = (
        _XML + '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:'
        'manifest:1.0" manifest:version="1.2">'
        f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{mime}"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    parts = {"mimetype": mime, "META-INF/manifest.xml": manifest, "content.xml": content}
    return _zip(dict(parts), first_stored="mimetype")


def make_odt(seed: Seeded) -> bytes:
    """An OpenDocument text of a few paragraphs."""
    paragraphs = "".join(f"<text:p>{escape(line)}</text:p>" for line in seed.lines())
    return _odf(
        "application/vnd.oasis.opendocument.text", f"<office:text>{paragraphs}</office:text>"
    )


def make_ods(seed: Seeded) -> bytes:
    """An OpenDocument spreadsheet of one sheet, ``Sheet1``, of words and numbers."""
    rows = []
    for row in seed.table():
        cells = "".join(
            f'<table:table-cell office:value-type="float" office:value="{v}"><text:p>{v}'
            "</text:p></table:table-cell>"
            if isinstance(v, int)
            else f'<table:table-cell office:value-type="string"><text:p>{escape(v)}'
            "</text:p></table:table-cell>"
            for v in row
        )
        rows.append(f"<table:table-row>{cells}</table:table-row>")
    table = f'<table:table table:name="Sheet1">{"".join(rows)}</table:table>'
    body = f"<office:spreadsheet>{table}</office:spreadsheet>"
    return _odf("application/vnd.oasis.opendocument.spreadsheet", body)


def make_pdf(seed: Seeded) -> bytes:
    """A one-page PDF showing a few lines of text."""
    shown = "".join(
        f"({line.replace(chr(92), '').replace('(', '').replace(')', '')}) Tj 0 -18 Td "
        for line in seed.lines()
    )
    stream = f"BT /F1 12 Tf 72 720 Td {shown}ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _image(seed: Seeded, kind: str) -> bytes:
    image = Image.new("RGB", _IMAGE_SIZE, seed.colour())
    draw = ImageDraw.Draw(image)
    w, h = _IMAGE_SIZE
    x, y = seed.rng.randrange(w // 2), seed.rng.randrange(h // 2)
    draw.rectangle((x, y, x + w // 3, y + h // 3), fill=seed.colour())
    buf = io.BytesIO()
    image.save(buf, format=kind)
    return buf.getvalue()


# MPEG-1 Layer III, 128 kbit/s, 44.1 kHz, no padding: 417 bytes a frame; zeroed side
# information and data decode as silence.
_MP3_HEADER = b"\xff\xfb\x90\x00"
_MP3_FRAME_BYTES = 417
_MP3_FRAMES = 40


def make_mp3(seed: Seeded) -> bytes:
    """About a second of silent MPEG audio, after an ID3 tag whose title is seeded."""
    title = seed.words(3).encode("latin-1")
    frame = b"\x00" + title  # text encoding latin-1, then the title
    tag_frame = b"TIT2" + struct.pack(">I", len(frame)) + b"\x00\x00" + frame
    size = len(tag_frame)
    synchsafe = bytes((size >> s) & 0x7F for s in (21, 14, 7, 0))
    tag = b"ID3\x03\x00\x00" + synchsafe + tag_frame
    audio = (_MP3_HEADER + bytes(_MP3_FRAME_BYTES - len(_MP3_HEADER))) * _MP3_FRAMES
    return tag + audio


def make_wav(seed: Seeded) -> bytes:
    """A quarter second of a seeded tone, 8 kHz mono."""
    rate, pitch = 8000, 200 + seed.number()
    samples = b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * pitch * n / rate)))
        for n in range(rate // 4)
    )
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples)
    return buf.getvalue()


def _box(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", 8 + len(body)) + kind + body


def make_mp4(seed: Seeded) -> bytes:
    """An MP4 container with no tracks (a movie header only, of a seeded time scale), and
    a free box of the seed: a file players open, with nothing to play."""
    mvhd = struct.pack(">I", 0) + struct.pack(">IIII", 0, 0, 600 + seed.number(), 0)
    mvhd += struct.pack(">IH", 0x00010000, 0x0100) + bytes(10)
    mvhd += struct.pack(">9I", 0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000)
    mvhd += bytes(24) + struct.pack(">I", 1)
    ftyp = _box(b"ftyp", b"isom" + struct.pack(">I", 512) + b"isomiso2mp41")
    return ftyp + _box(b"moov", _box(b"mvhd", mvhd)) + _box(b"free", seed.digest.encode())


def make_xcf(seed: Seeded) -> bytes:
    """A GIMP image (XCF version 0) of the image size, with no layers."""
    w, h = _IMAGE_SIZE
    header = b"gimp xcf file\x00" + struct.pack(">III", w, h, 0)
    return header + struct.pack(">II", 0, 0) + struct.pack(">I", 0) + struct.pack(">I", 0)


def _text(seed: Seeded) -> str:
    return "\n".join(seed.lines()) + "\n"


def _csv(seed: Seeded) -> str:
    return "".join(",".join(str(v) for v in row) + "\n" for row in seed.table())


def _tar(name: str, seed: Seeded) -> bytes:
    """An uncompressed tar of one text file, ``NAME/README.txt``, of fixed times."""
    buf = io.BytesIO()
    data = _text(seed).encode()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(f"{name}/README.txt")
        info.size, info.mtime, info.mode = len(data), 1704067200, 0o644
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# Compressed after the tar is made, so no time of the making goes into the bytes.
_ARCHIVES: tuple[tuple[str, Callable[[bytes], bytes]], ...] = (
    (".tar.gz", lambda b: gzip.compress(b, mtime=0)),
    (".tgz", lambda b: gzip.compress(b, mtime=0)),
    (".tar.xz", lzma.compress),
    (".tar", lambda b: b),
)


def _stem(name: str) -> str:
    return name.split(".", 1)[0] or "made"


def _maker(name: str) -> Callable[[Seeded], bytes] | None:
    """The maker for a file name's kind, by its suffix (or double suffix); None when no
    kind is made here."""
    lower = name.lower()
    stem = _stem(name)
    for ending, compress in _ARCHIVES:
        if lower.endswith(ending):
            return lambda s, c=compress: c(_tar(stem, s))  # type: ignore[misc]
    suffix = lower.rsplit(".", 1)[-1] if "." in lower else ""
    text: dict[str, Callable[[Seeded], str]] = {
        "txt": _text,
        "md": lambda s: "# " + _text(s),
        "csv": _csv,
        "json": lambda s: json.dumps({"name": s.words(2), "lines": s.lines()}, indent=1) + "\n",
        "html": lambda s: (
            "<!DOCTYPE html><html><body>"
            + "".join(f"<p>{escape(line)}</p>" for line in s.lines())
            + "</body></html>\n"
        ),
        "css": lambda s: f"body {{ color: #{bytes(s.colour()).hex()}; }}\n",
        "py": lambda s: "".join(f"print({line!r})\n" for line in s.lines()),
        "sh": lambda s: "#!/bin/sh\n" + "".join(f"echo '{line}'\n" for line in s.lines()),
        "srt": lambda s: "1\n00:00:00,000 --> 00:00:01,000\n" + s.words(4) + "\n",
        "tex": lambda s: (
            "\\documentclass{article}\\begin{document}\n" + _text(s) + "\\end{document}\n"
        ),
        "bib": lambda s: f"@misc{{made{s.number()}, title={{{s.words(4)}}}}}\n",
        "eml": lambda s: (
            f"From: a@example.org\nTo: b@example.org\nSubject: {s.words(3)}\n\n" + _text(s)
        ),
    }
    if suffix in text:
        make_text = text[suffix]
        return lambda s: make_text(s).encode("utf-8")
    binary: dict[str, Callable[[Seeded], bytes]] = {
        "xlsx": make_xlsx,
        "docx": make_docx,
        "pptx": make_pptx,
        "odt": make_odt,
        "ods": make_ods,
        "pdf": make_pdf,
        "png": lambda s: _image(s, "PNG"),
        "jpg": lambda s: _image(s, "JPEG"),
        "jpeg": lambda s: _image(s, "JPEG"),
        "gif": lambda s: _image(s, "GIF"),
        "webp": lambda s: _image(s, "WEBP"),
        "bmp": lambda s: _image(s, "BMP"),
        "mp3": make_mp3,
        "wav": make_wav,
        "mp4": make_mp4,
        "xcf": make_xcf,
        "zip": lambda s: _zip({f"{stem}/README.txt": _text(s)}),
        "gz": lambda s: gzip.compress(_text(s).encode(), mtime=0),
        "xz": lambda s: lzma.compress(_text(s).encode()),
    }
    return binary.get(suffix)


def made_kind(path: str) -> bool:
    """Whether `made_file` makes a file of the kind ``path``'s name says (else seeded bytes)."""
    return _maker(path.rsplit("/", 1)[-1]) is not None


def made_file(path: str, url: str, saved_as: tuple[str, ...] = ()) -> bytes:
    """The file made for dataset ``path``, seeded by ``url``: of the kind its name says,
    else of the kind of the first name a task saves it under (``saved_as``) that says one."""
    seed = Seeded(url)
    for name in (path.rsplit("/", 1)[-1], *saved_as):
        maker = _maker(name)
        if maker is not None:
            return maker(seed)
    return seed.rng.randbytes(256)
