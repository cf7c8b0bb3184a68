"""OSWorld's own metrics, called the way the evaluator calls them, against the same function
called directly.

cleanroom runs most of OSWorld's metrics from desktop-env itself (`checker_env`): the
function is OSWorld's, so what can differ is the way there: the files staged and copied
into the sandbox, the options carried as JSON, the answer carried back (numpy numbers,
bools), the working folder, the locale. Each metric that OSWorld-Verified uses is called
with every distinct option set its tasks give it, on files of the kind its tasks' result
getter reads (made here: a matching pair, a differing pair and a result that is no such
file), once through the sandbox and once in this process, and the two must agree: the
same number, or both raised the same exception.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("desktop_env")

from cleanroom.verifiers.osworld.cached_file import CachedFile
from cleanroom.verifiers.osworld.checker_env import (
    Limits,
    Raised,
    Returned,
    ReturnedOther,
    Stopped,
    run_metrics,
)
from cleanroom.verifiers.osworld.checker_env import MetricCall as Call
from cleanroom.verifiers.osworld.checker_env_worker import load_metric_module
from cleanroom.verifiers.osworld.own_metrics import OWN_METRICS, REFUSED
from cleanroom.verifiers.osworld.task import GetterSpec, MetricCall, load_task

from .reference import REPO

TASK_SET = REPO / "tests/data/osworld/evaluation_examples"


def _task_calls() -> list[tuple[str, MetricCall]]:
    listing = json.loads((TASK_SET / "test_all.json").read_text())
    found: list[tuple[str, MetricCall]] = []
    for domain, ids in listing.items():
        for task_id in ids:
            task = load_task(TASK_SET / "examples" / domain / f"{task_id}.json")
            found += [(task.id, call) for call in task.evaluator.calls]
    return found


def _distinct_cases() -> list[tuple[str, MetricCall]]:
    """One case per own metric and distinct options (and result getter kind)."""
    seen: set[str] = set()
    cases: list[tuple[str, MetricCall]] = []
    for task_id, call in _task_calls() if (TASK_SET / "test_all.json").exists() else []:
        if call.func not in OWN_METRICS:
            continue
        key = json.dumps([call.func, call.options, _suffix(call.result)], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        cases.append((f"{call.func}-{task_id[:8]}", call))
    return cases


def _suffix(spec: GetterSpec | None) -> str:
    if spec is None:
        return ""
    path = spec.config.get("path") or spec.config.get("dest") or ""
    if isinstance(path, list):
        path = path[0] if path else ""
    return Path(str(path)).suffix.lower()


# --- files of each kind ------------------------------------------------------------------


def _xlsx(value: Any) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"], sheet["B1"] = "name", "value"
    sheet["A2"], sheet["B2"] = "x", value
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _docx(text: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph(text)
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "a", text
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _pptx(text: str) -> bytes:
    import pptx

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = text
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _pdf(text: str) -> bytes:
    import fitz

    document = fitz.open()
    page = document.new_page()
    page.insert_text((72, 72), text)
    return bytes(document.tobytes())


def _image(shade: int, kind: str) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (32, 24), (shade, 128, 255 - shade)).save(out, format=kind)
    return out.getvalue()


def _archive(text: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("a.txt", text)
        z.writestr("index.html", f"<html><body><p>{text}</p></body></html>")
    return out.getvalue()


def _pair(suffix: str) -> tuple[bytes, bytes]:
    """A file of the kind ``suffix`` names, and one that differs from it."""
    makers: dict[str, Callable[[str], bytes]] = {
        ".xlsx": lambda t: _xlsx(len(t)),
        ".docx": _docx,
        ".pptx": _pptx,
        ".pdf": _pdf,
        ".png": lambda t: _image(len(t) * 20, "PNG"),
        ".jpg": lambda t: _image(len(t) * 20, "JPEG"),
        ".jpeg": lambda t: _image(len(t) * 20, "JPEG"),
        ".zip": _archive,
        ".epub": _archive,
        ".json": lambda t: json.dumps({"key": t}).encode(),
    }
    make = makers.get(suffix, lambda t: f"{t}\nline two\n".encode())
    return make("same"), make("different text")


def _files(root: Path, suffix: str) -> Iterator[tuple[str, CachedFile | None, CachedFile]]:
    same, other = _pair(suffix)

    def cached(name: str, data: bytes) -> CachedFile:
        path = root / f"{name}{suffix}"
        path.write_bytes(data)
        return CachedFile(str(path), data)

    expected = cached("expected", same)
    yield "matching", cached("result-match", same), expected
    yield "differing", cached("result-differ", other), expected
    yield "not such a file", cached("result-junk", b"\x00junk\xff"), expected


def _direct(func: str, module: str, args: list[Any], options: dict[str, Any]) -> Any:
    function = getattr(load_metric_module(module), func)
    try:
        value = function(*args, **options)
    except Exception as exc:
        return ("raised", type(exc).__name__)
    if type(value).__name__ == "bool_" or isinstance(value, bool | int | float):
        return ("value", float(value))
    try:
        return ("value", float(value))
    except (TypeError, ValueError):
        return ("other", type(value).__name__)


def _through_sandbox(answer: Any) -> Any:
    if isinstance(answer, Returned):
        return ("value", answer.value)
    if isinstance(answer, Raised):
        return ("raised", answer.error)
    if isinstance(answer, ReturnedOther):
        return ("other", answer.type_name)
    assert isinstance(answer, Stopped)
    return ("stopped", answer.why)


CASES = _distinct_cases()


def test_every_metric_osworld_verified_uses_is_cleanrooms_own_or_called_or_refused() -> None:
    from cleanroom.verifiers.osworld.metrics import METRICS
    from cleanroom.verifiers.osworld.task import INFEASIBLE

    used = {call.func for _, call in _task_calls()}
    assert used - set(METRICS) - set(OWN_METRICS) - {INFEASIBLE} == set(REFUSED)
    assert not set(METRICS) & set(OWN_METRICS)


@pytest.mark.parametrize("call", [c for _, c in CASES], ids=[n for n, _ in CASES])
def test_the_sandboxed_call_agrees_with_the_direct_one(tmp_path: Path, call: MetricCall) -> None:
    metric = OWN_METRICS[call.func]
    rule = call.expected.config.get("rules") if call.expected is not None else None
    cases: list[tuple[str, list[Any]]] = []
    for case, result, expected in _files(tmp_path, _suffix(call.result)):
        if call.expected is None:
            cases.append((case, [result]))
        elif call.expected.type in ("rule", "rule_relativeTime"):
            cases.append((case, [result, rule]))
        else:
            cases.append((case, [result, expected]))
    answers = run_metrics(
        [Call(metric, args, call.options) for _, args in cases],
        cache_dir=str(tmp_path),
        limits=Limits(),
    )
    for (case, args), answer in zip(cases, answers, strict=True):
        through = _through_sandbox(answer)
        direct = _direct(call.func, metric.module, [_path(a) for a in args], call.options)
        assert through == direct, f"{call.func} on the {case} file: {through} != {direct}"


def _path(value: Any) -> Any:
    return value.path if isinstance(value, CachedFile) else value
