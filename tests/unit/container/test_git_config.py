"""git's configuration syntax as git reads it: sections, quoting, continuations, case."""

from __future__ import annotations

import pytest

from cleanroom.verifiers.container.agent_state.git_config import (
    MalformedConfig,
    Setting,
    maybe_bool,
    parse,
)


def keys(data: bytes) -> list[tuple[str, str | None]]:
    return [(s.key, s.value) for s in parse(data)]


def test_a_default_repository_config_reads_as_its_four_settings() -> None:
    data = (
        b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n"
        b"\tbare = false\n\tlogallrefupdates = true\n"
    )

    assert keys(data) == [
        ("core.repositoryformatversion", "0"),
        ("core.filemode", "true"),
        ("core.bare", "false"),
        ("core.logallrefupdates", "true"),
    ]


def test_sections_and_names_ignore_case_and_subsections_keep_it() -> None:
    assert parse(b'[FiLter "Answer"]\n\tCLEAN = cat\n') == [
        Setting("filter", "Answer", "clean", "cat")
    ]


def test_the_older_dotted_header_reads_as_a_subsection() -> None:
    assert keys(b"[filter.answer]\nclean = cat\n") == [("filter.answer.clean", "cat")]


def test_a_header_may_share_its_line_with_a_setting() -> None:
    assert keys(b"[core] fsmonitor = /app/watch\n") == [("core.fsmonitor", "/app/watch")]


def test_quoted_parts_escapes_and_comments_read_as_git_reads_them() -> None:
    data = b'[x]\n v = "sh -c \\"cp a b\\"" ; comment\n w = a\\tb # c\n'

    assert keys(data) == [("x.v", 'sh -c "cp a b"'), ("x.w", "a\tb")]


def test_a_backslash_at_the_end_of_a_line_continues_the_value() -> None:
    assert keys(b'[filter "a"]\n clean = cp /tests/key \\\n /app/out\n') == [
        ("filter.a.clean", "cp /tests/key  /app/out")
    ]


def test_a_name_alone_is_a_boolean_true() -> None:
    [setting] = parse(b"[core]\n fsmonitor\n")

    assert setting.value is None
    assert maybe_bool(setting.value) is True


def test_a_byte_order_mark_and_crlf_line_ends_are_read_through() -> None:
    assert keys(b"\xef\xbb\xbf[x]\r\nv = 1\r\n") == [("x.v", "1")]


def test_a_vertical_tab_is_part_of_a_value_as_git_reads_it() -> None:
    [setting] = parse(b"[core]\n\tfsmonitor = false\x0b\n")

    assert setting.value == "false\x0b"
    assert maybe_bool(setting.value) is None  # git takes it for a hook's path


def test_a_subsection_escape_keeps_the_quote() -> None:
    assert keys(b'[x "a\\"b"]\nv = 1\n') == [('x.a"b.v', "1")]


@pytest.mark.parametrize(
    "data",
    [
        b"[x]\nv = \\q\n",  # an unknown escape
        b'[x]\nv = "open\n',  # a quote left open
        b"[x\nv = 1\n",  # a header left open
        b"[x]\n9v = 1\n",  # a name starting with a digit
        b"[x]\nv ! 1\n",  # no '=' after a name
        b'[x "a"b]\n',  # text after a subsection
        b"[x]\nv = a\0b\n",  # a NUL byte
        b"[x]\nv\r= 1\n",  # a carriage return git does not skip
    ],
)
def test_what_git_refuses_is_malformed(data: bytes) -> None:
    with pytest.raises(MalformedConfig):
        parse(data)


def test_a_name_before_any_section_is_read_and_names_no_setting() -> None:
    assert parse(b"k = v\n[x]\nv = 1\n") == [Setting("x", None, "v", "1")]


@pytest.mark.parametrize(
    ("value", "read"),
    [("true", True), ("Yes", True), ("1", True), ("off", False), ("", False), ("cat", None)],
)
def test_booleans_read_as_git_reads_them(value: str, read: bool | None) -> None:
    assert maybe_bool(value) is read
