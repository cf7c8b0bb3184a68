"""The real OSWorld tasks cleanroom carries, scored by both sides on the same values.

For each metric call of each task (tests/data/osworld/tasks and the bundled task), the
expected value is the task's own: its ``rule`` getter's config, read by both sides' rule
getters. The result values are what the task's result getter could hand the metric: for
a command, the output the task expects and near misses of it (trailing newline, case,
an excluded phrase, nothing); for a file, the file written out (the tasks' cloud
reference files are not kept in the repository, so the CSV ones are written here). Each
is scored by cleanroom's metric and OSWorld's.
"""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

pytest.importorskip("desktop_env")

from PIL import Image

from cleanroom.verifiers.osworld import getters as our_getters
from cleanroom.verifiers.osworld import metrics as ours
from cleanroom.verifiers.osworld.own_metrics import OWN_METRICS
from cleanroom.verifiers.osworld.task import MetricCall, Task, load_task

from .reference import (
    TASK_FILES,
    Files,
    agree,
    call_cleanroom,
    call_osworld,
    osworld,
)

# Metrics of the bundled tasks that cleanroom calls from desktop-env in the checker
# environment rather than implementing them: test_own_metrics compares those.
CALLED_FROM_DESKTOP_ENV = {"compare_archive"}
NOT_UTF8_TEXT = "text metrics: a result file that is not UTF-8"


def calls() -> list[tuple[str, int, Task, MetricCall]]:
    found = []
    for path in TASK_FILES:
        task = load_task(path)
        for index, call in enumerate(task.evaluator.calls):
            if call.func in CALLED_FROM_DESKTOP_ENV:
                continue
            found.append((f"{task.id[:8]}-{index}-{call.func}", index, task, call))
    return found


CALLS = calls()


def test_the_bundled_tasks_are_all_here() -> None:
    assert len(TASK_FILES) == 38  # 37 copied task files and the one cleanroom ships
    assert {call.func for _, _, _, call in CALLS} <= set(ours.METRICS)
    assert all(name in OWN_METRICS for name in CALLED_FROM_DESKTOP_ENV)


def rule_of(spec: Any) -> Any:
    """The rule getter's value, which both sides must read the same."""
    ours_value = our_getters.get_rule(None, spec.config)  # type: ignore[arg-type]
    theirs = osworld().getters["rule"](None, spec.config)
    assert ours_value == theirs
    return ours_value


def output_candidates(func: str, rule: Any) -> list[Any]:
    """Command outputs a task's result getter could give, from the task's own rule."""
    if func == "exact_match":
        want = rule["expected"]
        return [want, want.rstrip("\n"), want + "\n", want.upper(), " " + want, "", None]
    if func == "check_include_exclude":
        include, exclude = rule.get("include", []), rule.get("exclude", [])
        full = "".join(f"{s}\n" for s in include)
        outs = [full, full.rstrip("\n"), full.lower(), "", None]
        outs += [full + s + "\n" for s in exclude]
        outs += ["".join(f"{s}\n" for s in include if s != dropped) for dropped in include]
        return outs
    if func == "is_extension_installed":
        want = rule["expected"]
        return [want + "\n", "", "other.extension\n", want.upper() + "\n", f"x{want}y", None]
    if func == "check_gnome_favorite_apps":
        apps = rule["expected"]
        return [
            repr(apps) + "\n",
            repr(list(reversed(apps))) + "\n",
            repr([*apps, "vim.desktop"]) + "\n",
            repr(apps[:1]) + "\n",
            "@as []\n",
            "",
        ]
    if func == "check_direct_json_object":
        expected = rule["expected"]
        right = {key: names[2] for key, names in expected.items()}
        wrong = {key: "Fuji.jpg" for key in expected}
        missing = dict(list(right.items())[:1])
        return [
            repr(right) + "\n",
            repr(wrong) + "\n",
            repr(missing) + "\n",
            repr({**right, "extra": "x"}) + "\n",
            str({k: [v] for k, v in right.items()}),
            "null\n",
            "",
            "Traceback (most recent call last):\n",
        ]
    raise AssertionError(f"no output candidates for {func}")


TIMEDATECTL = (
    "               Local time: Thu 2024-01-25 12:56:06 {zone}\n"
    "           Universal time: Thu 2024-01-25 12:56:06 UTC\n"
    "                 RTC time: Thu 2024-01-25 12:56:05\n"
    "                Time zone: {name} ({zone}, {offset})\n"
    "System clock synchronized: yes\n"
    "              NTP service: inactive\n"
    "          RTC in local TZ: no\n"
)


def timedatectl_outputs() -> list[str]:
    utc = TIMEDATECTL.format(zone="UTC", name="Etc/UTC", offset="+0000")
    return [
        utc,
        TIMEDATECTL.format(zone="WET", name="Atlantic/Faroe", offset="+0000"),
        TIMEDATECTL.format(zone="CET", name="Europe/Paris", offset="+0100"),
        utc.replace("+0000)", "+0000) "),
        "\n".join(utc.split("\n")[:3]),
        "System has not been booted with systemd as init system (PID 1). Can't operate.\n",
        "",
    ]


def png(
    size: tuple[int, int], mode: str = "RGB", box: tuple[int, int, int, int] | None = None
) -> bytes:
    image = Image.new("RGBA", size, (0, 0, 0, 0))
    image.paste((10, 120, 200, 255), box or (0, 0, *size))
    out = io.BytesIO()
    if mode == "P+tRNS":
        image.convert("RGB").convert("P").save(out, "PNG", transparency=0)
    elif mode == "GIF":
        image.convert("RGB").convert("P").save(out, "GIF", transparency=0)
    elif mode == "WEBP":
        image.convert("RGB").save(out, "WEBP")
    else:
        image.convert(mode).save(out, "PNG")
    return out.getvalue()


def image_candidates() -> list[bytes | None]:
    return [
        png((128, 128)),
        png((128, 128), "RGBA"),
        png((128, 128), "RGBA", (10, 10, 120, 120)),  # transparent margins
        png((140, 140), "P+tRNS", (6, 6, 134, 134)),  # a 128x128 picture on a bigger canvas
        png((128, 128), "P+tRNS", (6, 6, 122, 122)),
        png((140, 140), "GIF", (6, 6, 134, 134)),
        png((128, 128), "WEBP"),
        png((128, 64)),
        png((64, 128), "L"),
        b"GIMP could not export the image",
        None,
    ]


GOLD_CSV = "Name,Age,City\nAnn,31,Paris\nBob,27,Zürich\n"


def csv_candidates() -> list[bytes | None]:
    rows = list(csv.reader(io.StringIO(GOLD_CSV)))
    quoted = io.StringIO()
    csv.writer(quoted, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return [
        GOLD_CSV.encode(),
        GOLD_CSV.replace("\n", "\r\n").encode(),
        GOLD_CSV.rstrip("\n").encode(),
        GOLD_CSV.encode("latin-1"),
        ("\ufeff" + GOLD_CSV).encode(),
        GOLD_CSV.replace(",", ", ").encode(),
        GOLD_CSV.upper().encode(),
        quoted.getvalue().encode(),
        b"",
        None,
    ]


def config_candidates(rule: Any) -> list[bytes | None]:
    want = rule["expected"].encode()
    return [want, want + b"\n", want.upper(), b"", b"\xff" + want, b"  " + want, None]


def test_every_call_is_covered() -> None:
    handled = {
        "exact_match",
        "check_include_exclude",
        "is_extension_installed",
        "check_gnome_favorite_apps",
        "check_direct_json_object",
        "is_utc_0",
        "is_in_vm_clickboard",
        "check_image_size",
        "compare_config",
        "compare_csv",
    }
    assert {call.func for _, _, _, call in CALLS} <= handled


@pytest.mark.parametrize(("name", "index", "task", "call"), CALLS, ids=[c[0] for c in CALLS])
def test_bundled_call(files: Files, name: str, index: int, task: Task, call: MetricCall) -> None:
    mine_metric, their_metric = ours.METRICS[call.func], osworld().metrics[call.func]
    options = call.options

    def compare(
        ours_args: tuple[Any, ...], their_args: tuple[Any, ...], case: Any, **kw: Any
    ) -> None:
        mine = call_cleanroom(mine_metric, *ours_args, **options)
        theirs = call_osworld(their_metric, *their_args, **options)
        agree(f"{name} ({task.path})", mine, theirs, case, **kw)

    if call.func == "is_utc_0":
        for output in timedatectl_outputs():
            compare((output,), (output,), output)
        return
    if call.func == "is_in_vm_clickboard":  # the task swaps them: the rule is the result
        assert call.expected is not None and call.result.type == "rule"
        rule = rule_of(call.result)
        want = rule["expected"]
        for output in [want, want + "\n", "copied: " + want, want.upper(), "", None]:
            compare((rule, output), (rule, output), output)
        return
    assert call.expected is not None
    if call.expected.type == "rule":
        rule = rule_of(call.expected)
        if call.result.type in ("vm_command_line", "vm_command_error"):
            for output in output_candidates(call.func, rule):
                compare((output, rule), (output, rule), output)
            return
        if call.func == "check_image_size":
            for data in image_candidates():
                path, cached = files.pair(data, "resized.png")
                compare((cached, rule), (path, rule), data[:40] if data else data)
            return
        if call.func == "compare_config":
            for data in config_candidates(rule):
                path, cached = files.pair(data, "OpenProject.txt")
                mine = call_cleanroom(mine_metric, cached, rule, **options)
                theirs = call_osworld(their_metric, path, rule, **options)
                differ = NOT_UTF8_TEXT if data and data.startswith(b"\xff") else None
                agree(name, mine, theirs, data, may_differ=differ)
            return
    if call.func == "compare_csv":
        assert call.expected.type == "cloud_file"
        gives = len(call.expected.config.get("gives", [0]))
        for data in csv_candidates():
            result_path, result_cached = files.pair(data, "output.csv")
            # The reference files: the gold one last, behind ones that differ from it.
            golds = [files.pair(b"Name,Age\n", "gold.csv") for _ in range(gives - 1)]
            golds.append(files.pair(GOLD_CSV.encode(), "gold.csv"))
            theirs_expected: Any = [p for p, _ in golds] if gives > 1 else golds[0][0]
            ours_expected: Any = [c for _, c in golds] if gives > 1 else golds[0][1]
            compare((result_cached, ours_expected), (result_path, theirs_expected), data)
        return
    raise AssertionError(f"{name}: no candidates for {call.func} from {call.result.type}")


FILE_METRICS = ["check_list", "diff_text_file", "check_json", "check_csv", "compare_csv"]
FILE_METRICS += ["compare_text_file", "compare_config", "check_image_size"]


@pytest.mark.parametrize("name", FILE_METRICS)
def test_osworld_scores_a_missing_result_file_as_zero(name: str) -> None:
    """OSWorld's vm_file gives None for a missing file; cleanroom's evaluator scores 0
    without calling the metric. Equal scores need OSWorld's metric to give 0 for None."""
    expected: Any = {"expected": "x", "expect": [], "height": 1}
    if name in ("diff_text_file", "compare_text_file", "compare_csv"):
        expected = "/nonexistent"
    assert call_osworld(osworld().metrics[name], None, expected) == 0
