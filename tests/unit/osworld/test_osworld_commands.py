"""How commands reach a guest: OSWorld's shell truthiness, splitting and placeholders."""

from __future__ import annotations

import pytest

from cleanroom.guests.base import resolve_path, to_argv
from cleanroom.verifiers.osworld.commands import (
    BadCommand,
    decode_output,
    guest_command,
    substitute_placeholders,
)


def test_shell_string_true_is_truthy() -> None:
    assert guest_command("echo hi | wc -c", "true", "/h") == ("echo hi | wc -c", True)


def test_shell_string_false_is_also_truthy_like_python() -> None:
    assert guest_command("echo hi", "false", "/h")[1] is True


def test_string_without_shell_is_split_shell_style() -> None:
    assert guest_command("which 'my app'", None, "/h") == (["which", "my app"], False)


def test_list_items_with_leading_tilde_slash_expand_to_home() -> None:
    cmd, _ = guest_command(["cat", "~/a.txt", "x~/b", "~"], False, "/home/u")
    assert cmd == ["cat", "/home/u/a.txt", "x~/b", "~"]


def test_list_with_shell_pipe_symbol_stays_an_argument() -> None:
    cmd, shell = guest_command(["code", "--list-extensions", "|", "grep", "x"], None, "/h")
    assert shell is False and cmd[2] == "|"


def test_non_string_command_is_refused() -> None:
    with pytest.raises(BadCommand):
        guest_command(42, True, "/h")


def test_empty_list_command_is_refused() -> None:
    with pytest.raises(BadCommand):
        guest_command([], False, "/h")


def test_placeholders_fill_strings_and_list_items() -> None:
    values = {"CLIENT_PASSWORD": "pw", "SCREEN_WIDTH_HALF": "960", "SCREEN_WIDTH": "1920"}
    assert substitute_placeholders("echo {CLIENT_PASSWORD}", values) == "echo pw"
    assert substitute_placeholders(["x({SCREEN_WIDTH_HALF}, {SCREEN_WIDTH})"], values) == [
        "x(960, 1920)"
    ]


def test_output_keeps_trailing_newline_and_spaces() -> None:
    assert decode_output(b"  Directory exists.\n") == "  Directory exists.\n"


def test_output_gets_universal_newlines_like_text_mode() -> None:
    assert decode_output(b"a\r\nb\rc") == "a\nb\nc"


def test_output_with_invalid_utf8_is_replaced_not_dropped() -> None:
    assert decode_output(b"ok\xff\n") == "ok\ufffd\n"


def test_to_argv_shell_list_follows_popen() -> None:
    assert to_argv(["echo $0", "zero"], shell=True) == ["/bin/sh", "-c", "echo $0", "zero"]


def test_resolve_path_handles_tilde_and_relative() -> None:
    assert resolve_path("~/Desktop", "/h/u") == "/h/u/Desktop"
    assert resolve_path("eval.sh", "/h/u") == "/h/u/eval.sh"
    assert resolve_path("/etc/x", "/h/u") == "/etc/x"
