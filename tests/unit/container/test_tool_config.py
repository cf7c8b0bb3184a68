"""Configuration in the agent's state that a tool of the verifier's would obey: git's
programs, hooks and redirects, a home's start-up and rc files; found in the archives."""

from __future__ import annotations

import io
import tarfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleanroom.verifiers.container.agent_state import tool_config
from cleanroom.verifiers.container.agent_state.tool_config import (
    find_in_archives,
    verifier_homes,
)
from cleanroom.verifiers.container.decision.config_findings import ConfigKind, ToolConfig
from cleanroom.verifiers.container.decision.tamper import TamperReport

DEFAULT_CONFIG = (
    b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n"
    b"\tbare = false\n\tlogallrefupdates = true\n"
)
CLONED_CONFIG = DEFAULT_CONFIG + (
    b'[remote "origin"]\n\turl = https://example.com/r.git\n'
    b"\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
    b'[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n'
)


class Link(str):
    """A symlink's target, as a member's content."""


class Fifo:
    """A FIFO, as a member's content."""


Content = bytes | Link | Fifo | None  # None: a folder


def archive(members: dict[str, Content], modes: dict[str, int] | None = None) -> io.BytesIO:
    """A state archive whose members are named as Docker names them (``app/...``)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.mode = (modes or {}).get(name, 0o644)
            if content is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            elif isinstance(content, Link):
                info.type, info.linkname = tarfile.SYMTYPE, str(content)
                tar.addfile(info)
            elif isinstance(content, Fifo):
                info.type = tarfile.FIFOTYPE
                tar.addfile(info)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    buf.seek(0)
    return buf


def repo(config: bytes, extra: dict[str, Content] | None = None) -> dict[str, Content]:
    """A work dir ``/app`` holding a repository with ``config``."""
    return {
        "app": None,
        "app/.git": None,
        "app/.git/HEAD": b"ref: refs/heads/main\n",
        "app/.git/objects": None,
        "app/.git/refs": None,
        "app/.git/hooks": None,
        "app/.git/config": config,
        "app/out.txt": b"answer\n",
        **(extra or {}),
    }


def found_in(
    members: dict[str, Content],
    *,
    path: str = "/app",
    modes: dict[str, int] | None = None,
    homes: tuple[str, ...] = ("/root",),
    pristine: dict[str, bytes] | None = None,
) -> list[ToolConfig]:
    return find_in_archives([(path, archive(members, modes))], homes, pristine or {})


def git_keys(found: list[ToolConfig]) -> list[str]:
    return [f.key for f in found if f.kind is ConfigKind.GIT_SETTING]


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ('[filter "answer"]\n\tclean = cp /tests/key /app/out', "filter.answer.clean"),
        ('[filter "a"]\n\tsmudge = ./s', "filter.a.smudge"),
        ('[filter "a"]\n\tprocess = ./p', "filter.a.process"),
        ("[core]\n\tfsmonitor = /app/watch.sh", "core.fsmonitor"),
        ("[core]\n\tfsmonitor", "core.fsmonitor"),
        ("[core]\n\tfsmonitor = false\x0b", "core.fsmonitor"),
        ("[core]\n\thooksPath = /app/hooks", "core.hookspath"),
        ("[core]\n\tpager = ./p", "core.pager"),
        ("[core]\n\teditor = ./e", "core.editor"),
        ("[core]\n\tsshCommand = ./s", "core.sshcommand"),
        ("[core]\n\taskPass = ./a", "core.askpass"),
        ("[core]\n\tgitProxy = ./g", "core.gitproxy"),
        ("[core]\n\talternateRefsCommand = ./a", "core.alternaterefscommand"),
        ("[core]\n\tworktree = /tests", "core.worktree"),
        ("[diff]\n\texternal = ./d", "diff.external"),
        ('[diff "txt"]\n\ttextconv = ./t', "diff.txt.textconv"),
        ('[diff "txt"]\n\tcommand = ./c', "diff.txt.command"),
        ('[difftool "x"]\n\tcmd = ./c', "difftool.x.cmd"),
        ('[mergetool "x"]\n\tpath = ./m', "mergetool.x.path"),
        ('[merge "ours"]\n\tdriver = ./m %O %A %B', "merge.ours.driver"),
        ("[sequence]\n\teditor = ./e", "sequence.editor"),
        ("[credential]\n\thelper = ./h", "credential.helper"),
        ('[credential "https://x"]\n\thelper = ./h', "credential.https://x.helper"),
        ("[gpg]\n\tprogram = ./g", "gpg.program"),
        ('[gpg "ssh"]\n\tprogram = ./g', "gpg.ssh.program"),
        ('[gpg "ssh"]\n\tdefaultKeyCommand = ./g', "gpg.ssh.defaultkeycommand"),
        ("[uploadpack]\n\tpackObjectsHook = ./h", "uploadpack.packobjectshook"),
        ("[include]\n\tpath = /app/more", "include.path"),
        ('[includeIf "gitdir:/"]\n\tpath = /app/more', "includeif.gitdir:/.path"),
        ("[alias]\n\tst = !cp /tests/key /app/out", "alias.st"),
        ("[pager]\n\tstatus = ./p", "pager.status"),
        ("[interactive]\n\tdiffFilter = ./f", "interactive.difffilter"),
        ('[remote "origin"]\n\tuploadpack = ./u', "remote.origin.uploadpack"),
        ('[remote "origin"]\n\treceivepack = ./r', "remote.origin.receivepack"),
        ('[remote "origin"]\n\tproxy = http://x', "remote.origin.proxy"),
        ("[http]\n\tproxy = http://x", "http.proxy"),
        ('[protocol "ext"]\n\tallow = always', "protocol.ext.allow"),
        ('[submodule "m"]\n\tupdate = !./u', "submodule.m.update"),
        ('[tar "tgz"]\n\tcommand = ./t', "tar.tgz.command"),
        ('[trailer "x"]\n\tcommand = ./t', "trailer.x.command"),
        ("[sendemail]\n\tsendmailCmd = ./s", "sendemail.sendmailcmd"),
        ("[imap]\n\ttunnel = ./t", "imap.tunnel"),
        ('[hook "lint"]\n\tcommand = ./l', "hook.lint.command"),
        ('[guitool "x"]\n\tcmd = ./g', "guitool.x.cmd"),
    ],
)
def test_each_git_setting_that_runs_a_program_or_leads_elsewhere_is_found(
    config: str, key: str
) -> None:
    found = found_in(repo(DEFAULT_CONFIG + config.encode() + b"\n"))

    assert git_keys(found) == [key]
    assert found[0].path == "/app/.git/config"


@pytest.mark.parametrize(
    "config",
    [
        DEFAULT_CONFIG,
        CLONED_CONFIG,
        DEFAULT_CONFIG + b"[core]\n\tfsmonitor = false\n\tquotePath = off\n",
        DEFAULT_CONFIG + b"[pager]\n\tlog = false\n[alias]\n\tst = status\n",
        DEFAULT_CONFIG + b"[credential]\n\thelper =\n",
        DEFAULT_CONFIG + b'[protocol "ext"]\n\tallow = never\n',
        DEFAULT_CONFIG + b"[user]\n\tname = A\n\temail = a@example.com\n",
        DEFAULT_CONFIG + b"[trace2]\n\teventTarget = /logs/verifier/reward.txt\n",
        DEFAULT_CONFIG + b'[filter "lfs"]\n\trequired = true\n',
    ],
    ids=[
        "git-init",
        "git-clone",
        "fsmonitor-off",
        "boolean-pager-plain-alias",
        "helper-list-cleared",
        "ext-never",
        "user",
        "trace2-only-read-globally",
        "filter-without-program",
    ],
)
def test_an_ordinary_repository_config_is_not_found(config: bytes) -> None:
    assert found_in(repo(config)) == []


def test_sample_hooks_and_a_hook_that_is_not_executable_are_not_found() -> None:
    samples = {f"app/.git/hooks/{n}.sample": b"#!/bin/sh\n" for n in ("pre-commit", "update")}
    members = repo(DEFAULT_CONFIG, {**samples, "app/.git/hooks/post-checkout": b"#!/bin/sh\n"})
    modes = {name: 0o755 for name in samples}

    assert found_in(members, modes=modes) == []


def test_an_executable_hook_is_found_by_its_name() -> None:
    members = repo(DEFAULT_CONFIG, {"app/.git/hooks/pre-commit": b"#!/bin/sh\ncp a b\n"})

    [found] = found_in(members, modes={"app/.git/hooks/pre-commit": 0o755})

    assert (found.path, found.kind, found.key) == (
        "/app/.git/hooks/pre-commit",
        ConfigKind.GIT_HOOK,
        "pre-commit",
    )


def test_a_hook_that_is_a_link_and_a_hooks_folder_that_is_a_link_are_found() -> None:
    hook = repo(DEFAULT_CONFIG, {"app/.git/hooks/post-merge": Link("/tests/run.sh")})
    folder = repo(DEFAULT_CONFIG, {"app/.git/hooks": Link("/tests")})

    assert [f.kind for f in found_in(hook)] == [ConfigKind.GIT_HOOK]
    assert [(f.key, f.kind) for f in found_in(folder)] == [("hooks", ConfigKind.GIT_REDIRECT)]


def test_a_config_that_is_a_link_is_a_redirect() -> None:
    [found] = found_in(repo(Link("/tmp/config")))

    assert (found.kind, found.key) == (ConfigKind.GIT_REDIRECT, "config")


def test_a_git_file_leading_out_of_the_state_is_a_redirect() -> None:
    [found] = found_in({"app": None, "app/.git": b"gitdir: /srv/other/.git\n"})

    assert (found.path, found.kind) == ("/app/.git", ConfigKind.GIT_REDIRECT)
    assert "/srv/other/.git" in found.why


def test_a_git_file_leading_inside_the_state_has_that_repository_judged() -> None:
    members = {
        "app": None,
        "app/lib": None,
        "app/lib/.git": b"gitdir: ../.modules/lib\n",
        "app/.modules": None,
        "app/.modules/lib": None,
        "app/.modules/lib/config": DEFAULT_CONFIG + b'[filter "x"]\n\tclean = ./x\n',
    }

    [found] = found_in(members)

    assert (found.path, found.key) == ("/app/.modules/lib/config", "filter.x.clean")


def test_a_commondir_leading_out_is_a_redirect_and_one_inside_is_followed() -> None:
    outside = repo(DEFAULT_CONFIG, {"app/.git/commondir": b"/srv/main/.git\n"})
    inside = repo(
        DEFAULT_CONFIG,
        {
            "app/.git/commondir": b"../common\n",
            "app/common": None,
            "app/common/config": b"[core]\n\thooksPath = /app/h\n",
        },
    )

    assert [f.kind for f in found_in(outside)] == [ConfigKind.GIT_REDIRECT]
    assert [(f.path, f.key) for f in found_in(inside)] == [("/app/common/config", "core.hookspath")]


def test_a_work_dir_git_would_take_for_a_bare_repository_has_its_config_judged() -> None:
    members = {
        "app": None,
        "app/HEAD": b"ref: refs/heads/main\n",
        "app/objects": None,
        "app/refs": None,
        "app/config": b'[core]\n\tbare = true\n[filter "a"]\n\tclean = ./x\n',
    }

    assert git_keys(found_in(members)) == ["filter.a.clean"]


def test_a_bare_repository_whose_folders_are_links_has_its_config_judged() -> None:
    members = {
        "app": None,
        "app/HEAD": Link("/srv/HEAD"),
        "app/objects": Link("/srv/objects"),
        "app/refs": Link("/srv/refs"),
        "app/config": b'[filter "a"]\n\tclean = ./x\n',
    }

    assert git_keys(found_in(members)) == ["filter.a.clean"]


def test_a_file_named_config_outside_any_repository_is_not_read_as_git_config() -> None:
    members = {"app": None, "app/config": b'[filter "a"]\n\tclean = ./x\n'}

    assert found_in(members) == []


@pytest.mark.parametrize(
    "config",
    [
        b"[core\n\tfsmonitor = ./x\n",
        b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4,
        b"[x]\n\tv = \\q\n",
    ],
    ids=["unclosed-header", "binary", "unknown-escape"],
)
def test_a_config_git_could_not_read_is_found_unreadable(config: bytes) -> None:
    [found] = found_in(repo(config))

    assert (found.path, found.kind) == ("/app/.git/config", ConfigKind.UNREADABLE)


def test_a_config_over_the_cap_is_found_unread() -> None:
    huge = DEFAULT_CONFIG + b"# padding\n" * (tool_config.MAX_CONFIG_BYTES // 10 + 1)

    [found] = found_in(repo(huge))

    assert found.kind is ConfigKind.UNREADABLE


def test_a_config_that_is_a_fifo_is_found_and_never_read() -> None:
    [found] = found_in(repo(Fifo()))  # type: ignore[arg-type]

    assert found.kind is ConfigKind.UNREADABLE


def test_odd_names_beside_a_repository_are_read_through() -> None:
    members = repo(
        DEFAULT_CONFIG,
        {
            "app/caf\udce9": b"x",
            "app/new\nline": None,
            "app/new\nline/config": b"\xff\xfe",
            "app/.git/hooks/pre-commit\udcff": b"x",
        },
    )

    assert found_in(members) == []


def test_an_archive_that_is_not_a_tar_is_found_unreadable_and_never_raises() -> None:
    [found] = find_in_archives([("/app", io.BytesIO(b"\x00junk" * 1000))], ["/root"], {})

    assert (found.path, found.kind) == ("/app", ConfigKind.UNREADABLE)


def test_more_git_directories_than_the_cap_are_found_unread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tool_config, "MAX_GIT_DIRS", 3)
    members: dict[str, Content] = {"app": None}
    for n in range(5):
        members[f"app/r{n}"] = None
        members[f"app/r{n}/.git"] = None
        members[f"app/r{n}/.git/config"] = DEFAULT_CONFIG

    found = found_in(members)

    assert [f.kind for f in found] == [ConfigKind.UNREADABLE]


def home(members: dict[str, Content]) -> dict[str, Content]:
    return {"root": None, **members}


def test_a_global_gitconfig_in_a_home_that_is_state_is_judged_with_the_global_keys() -> None:
    members = home(
        {
            "root/.gitconfig": b"[user]\n\tname = A\n[trace2]\n\teventTarget = /logs/x\n",
            "root/.config": None,
            "root/.config/git": None,
            "root/.config/git/config": b'[filter "a"]\n\tsmudge = ./s\n',
        }
    )

    found = found_in(members, path="/root")

    assert [(f.path, f.key) for f in found] == [
        ("/root/.config/git/config", "filter.a.smudge"),
        ("/root/.gitconfig", "trace2.eventtarget"),
    ]


def test_a_homes_start_up_file_as_the_image_ships_it_is_not_found() -> None:
    bashrc = b"# ~/.bashrc: executed by bash(1) for non-login shells.\n"

    found = found_in(
        home({"root/.bashrc": bashrc}), path="/root", pristine={"/root/.bashrc": bashrc}
    )

    assert found == []


def test_a_homes_start_up_file_the_agent_changed_is_found() -> None:
    pristine = {"/root/.bashrc": b"# ~/.bashrc\n"}

    [found] = found_in(
        home({"root/.bashrc": b"# ~/.bashrc\ncp /tests/key /app/out\n"}),
        path="/root",
        pristine=pristine,
    )

    assert (found.path, found.kind) == ("/root/.bashrc", ConfigKind.START_UP_FILE)


def test_a_same_size_start_up_file_with_other_content_is_found() -> None:
    [found] = found_in(
        home({"root/.profile": b"evil"}), path="/root", pristine={"/root/.profile": b"good"}
    )

    assert found.kind is ConfigKind.START_UP_FILE


def test_a_tools_rc_file_not_in_the_image_and_a_start_up_file_as_a_link_are_found() -> None:
    members = home({"root/.curlrc": b"output = /logs/verifier/reward.txt\n"})
    members["root/.profile"] = Link("/app/profile")

    found = found_in(members, path="/root")

    assert [(f.path, f.kind) for f in found] == [
        ("/root/.curlrc", ConfigKind.RC_FILE),
        ("/root/.profile", ConfigKind.START_UP_FILE),
    ]


def test_a_file_in_a_folder_whose_files_a_tool_runs_is_found() -> None:
    members = home(
        {"root/.gradle": None, "root/.gradle/init.d": None, "root/.gradle/init.d/a.gradle": b"x"}
    )

    [found] = found_in(members, path="/root")

    assert (found.path, found.key) == ("/root/.gradle/init.d/a.gradle", "gradle")


def test_start_up_files_outside_the_verifiers_homes_are_data() -> None:
    members = {"app": None, "app/.bashrc": b"cp /tests/key /app/out\n", "app/.curlrc": b"x"}

    assert found_in(members) == []


def test_the_verifiers_homes_are_roots_its_home_variable_and_its_named_users() -> None:
    assert verifier_homes(None, None) == ["/root"]
    assert verifier_homes("tester:tester", "/srv/home/") == [
        "/home/tester",
        "/root",
        "/srv/home",
    ]
    assert verifier_homes("1000", "relative") == ["/root"]


def test_found_configuration_is_tamper_and_named_with_its_path_and_key() -> None:
    found = ToolConfig(
        "/app/.git/config", ConfigKind.GIT_SETTING, "filter.a.clean", "runs a program"
    )
    report = TamperReport(protected=(), planted=(), config=(found,))

    assert report.tampered
    assert report.paths == ["config /app/.git/config: filter.a.clean (git setting: runs a program)"]


def test_a_state_with_no_repository_and_no_home_is_not_read_again() -> None:
    tree = ["app", "app/src", "app/src/lib", "app/.venv/bin/python"]

    assert not tool_config.worth_reading([("/app", tree)], ["/root"])


@pytest.mark.parametrize(
    ("path", "tree"),
    [
        ("/app", ["app", "app/.git"]),  # a repository's folder
        ("/app", ["app", "app/sub/objects", "app/sub/refs"]),  # a bare one
        ("/app", ["app", "app/objects"]),  # a link or a half of one: read to be sure
        ("/root", ["root"]),  # a home folder
        ("/root/.config", ["root/.config"]),  # part of one
    ],
)
def test_a_state_with_a_repository_or_a_home_is_read(path: str, tree: list[str]) -> None:
    assert tool_config.worth_reading([(path, tree)], ["/root"])


def test_a_hook_the_task_declares_as_state_is_its_own_business() -> None:
    members = repo(DEFAULT_CONFIG, {"app/.git/hooks/pre-commit": b"#!/bin/sh\n"})
    modes = {"app/.git/hooks/pre-commit": 0o755}
    archives = [("/app", archive(members, modes))]

    declared = find_in_archives(archives, ["/root"], {}, named=["/app/.git/hooks/"])
    whole_repo = find_in_archives(
        [("/app", archive(members, modes))], ["/root"], {}, named=["/app/.git"]
    )

    assert declared == []
    assert [f.kind for f in whole_repo] == [ConfigKind.GIT_HOOK]


def test_a_start_up_file_the_task_declares_as_state_is_its_own_business() -> None:
    members = home({"root/.bashrc": b"alias ll='ls -l'\n"})

    def found(named: list[str]) -> list[ToolConfig]:
        return find_in_archives([("/root", archive(members))], ["/root"], {}, named=named)

    assert found(["/root/.bashrc"]) == []
    assert [f.path for f in found(["/root"])] == ["/root/.bashrc"]


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=400))
def test_any_bytes_as_a_repository_config_are_judged_and_never_raise(data: bytes) -> None:
    found = found_in(repo(data))

    assert all(f.path == "/app/.git/config" for f in found)


member_names = st.lists(
    st.sampled_from([".git", "HEAD", "config", "commondir", "objects", "refs", "hooks", "x"]),
    min_size=1,
    max_size=4,
).map(lambda parts: "app/" + "/".join(parts))
member_contents = st.one_of(
    st.none(),
    st.binary(max_size=60),
    st.sampled_from([b"gitdir: /elsewhere\n", b"gitdir: ..\n", b"../..\n", b"/\n"]),
    st.text(max_size=20).map(Link),
    st.just(Fifo()),
)


@settings(max_examples=200, deadline=None)
@given(members=st.dictionaries(member_names, member_contents, max_size=12))
def test_any_tree_of_git_names_is_judged_and_never_raises(members: dict[str, Content]) -> None:
    found_in({"app": None, **members})
