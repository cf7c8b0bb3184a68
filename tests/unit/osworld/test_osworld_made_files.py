"""Files made in place of OSWorld's dataset files: of the kind their name says, seeded by
their URL, and written into a mirror folder where `mirror.resolve` reads them."""

from __future__ import annotations

import io
import json
import tarfile
import wave
import zipfile
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from PIL import Image

from cleanroom.verifiers.osworld.made_files import made_file, made_kind
from cleanroom.verifiers.osworld.mirror import DATASET_URL, Mirror, fetch_task_file
from cleanroom.verifiers.osworld.mirror_fill import (
    MANIFEST_NAME,
    FileState,
    fill_mirror,
    made_files_in,
)

SHEET_URL = DATASET_URL + "libreoffice_calc/t1/Order%20Sales.xlsx"
SHEET_PATH = "libreoffice_calc/t1/Order Sales.xlsx"
NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def zip_parts(data: bytes) -> set[str]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.testzip() is None
        return set(z.namelist())


def test_the_same_url_makes_the_same_bytes_and_another_url_other_bytes() -> None:
    one = made_file("a/b.xlsx", DATASET_URL + "a/b.xlsx")
    assert made_file("a/b.xlsx", DATASET_URL + "a/b.xlsx") == one
    assert made_file("a/b.xlsx", DATASET_URL + "a/c.xlsx") != one


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("s.xlsx", {"xl/workbook.xml", "xl/worksheets/sheet1.xml", "xl/worksheets/sheet3.xml"}),
        ("d.docx", {"[Content_Types].xml", "word/document.xml"}),
        ("p.pptx", {"ppt/presentation.xml", "ppt/slides/slide1.xml", "ppt/theme/theme1.xml"}),
        ("t.odt", {"mimetype", "content.xml", "META-INF/manifest.xml"}),
        ("t.ods", {"mimetype", "content.xml", "META-INF/manifest.xml"}),
    ],
)
def test_an_office_file_is_a_zip_with_its_formats_parts(name: str, parts: set[str]) -> None:
    assert parts <= zip_parts(made_file(name, "u"))


def test_a_spreadsheet_has_a_header_row_then_words_and_numbers() -> None:
    with zipfile.ZipFile(io.BytesIO(made_file("s.xlsx", SHEET_URL))) as z:
        sheet = ET.fromstring(z.read("xl/worksheets/sheet1.xml"))
    rows = sheet.findall(f".//{NS}row")
    assert [t.text for t in rows[0].iter(f"{NS}t")] == ["Name", "Amount", "Count"]
    assert len(rows) > 2 and rows[1].findall(f"{NS}c")[1].find(f"{NS}v") is not None


def test_a_pdf_has_a_page_and_a_cross_reference_table_that_points_at_its_objects() -> None:
    data = made_file("r.pdf", "u")
    assert data.startswith(b"%PDF-1.4") and data.rstrip().endswith(b"%%EOF")
    xref = int(data.rsplit(b"startxref\n", 1)[1].split(b"\n")[0])
    assert data[xref:].startswith(b"xref")
    first = int(data[xref:].split(b"\n")[3].split()[0])  # object 1's offset
    assert data[first:].startswith(b"1 0 obj")


@pytest.mark.parametrize(("name", "kind"), [("i.png", "PNG"), ("i.jpg", "JPEG"), ("i.gif", "GIF")])
def test_an_image_opens_as_its_kind(name: str, kind: str) -> None:
    assert Image.open(io.BytesIO(made_file(name, "u"))).format == kind


def test_sound_and_video_files_carry_their_formats_headers() -> None:
    mp3 = made_file("a.mp3", "u")
    assert mp3.startswith(b"ID3") and b"\xff\xfb\x90\x00" in mp3
    with wave.open(io.BytesIO(made_file("a.wav", "u"))) as w:
        assert w.getnframes() > 0
    assert made_file("v.mp4", "u")[4:8] == b"ftyp"


def test_a_tar_gz_is_an_archive_of_a_text_and_is_the_same_each_time() -> None:
    data = made_file("profile.tar.gz", "u")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert tar.getnames() == ["profile/README.txt"]
    assert made_file("profile.tar.gz", "u") == data


def test_text_kinds_are_text_of_their_syntax() -> None:
    assert json.loads(made_file("x.json", "u"))
    assert made_file("run.sh", "u").startswith(b"#!/bin/sh\n")
    assert made_file("t.csv", "u").splitlines()[0] == b"Name,Amount,Count"


def test_a_name_of_no_known_kind_gets_seeded_bytes() -> None:
    assert not made_kind("x/model.bin") and made_kind("x/model.xlsx")
    assert made_file("x/model.bin", "u") != made_file("x/model.bin", "v")


def test_a_made_fill_writes_each_file_where_the_mirror_reads_it_and_marks_it_made(
    tmp_path: Path,
) -> None:
    report = fill_mirror([SHEET_URL], tmp_path, make=True)

    assert report.count(FileState.MADE) == 1 and report.complete
    data = fetch_task_file(SHEET_URL, Mirror(str(tmp_path)), timeout=1, cap=1 << 20)
    assert data == made_file(SHEET_PATH, SHEET_URL)
    index = json.loads((tmp_path / MANIFEST_NAME).read_text())
    assert index["files"][SHEET_PATH]["made"] is True
    assert made_files_in(tmp_path) == 1


def test_a_made_fill_keeps_a_file_already_in_the_mirror(tmp_path: Path) -> None:
    fill_mirror([SHEET_URL], tmp_path, make=True)
    again = fill_mirror([SHEET_URL], tmp_path, make=True)
    assert again.count(FileState.PRESENT) == 1


def test_a_dataset_name_of_no_kind_is_made_as_the_kind_the_task_saves_it_as() -> None:
    from cleanroom.verifiers.osworld.mirror import task_file_names
    from cleanroom.verifiers.osworld.task import parse_task

    url = DATASET_URL + "libreoffice_impress/t/deck.file"
    step = {"url": url, "path": "/home/user/Desktop/deck.pptx"}
    task = parse_task(
        {
            "id": "t",
            "config": [{"type": "download", "parameters": {"files": [step]}}],
            "evaluator": {"func": "f", "result": {"type": "vm_file", "path": "/x"}},
        }
    )
    names = task_file_names(task)
    assert names == {url: ("deck.pptx",)}
    assert "ppt/presentation.xml" in zip_parts(made_file("t/deck.file", url, names[url]))
