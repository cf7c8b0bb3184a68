"""Configuration in the agent's state that a tool of the verifier's would obey.

The verifier's tools are the pristine image's, but some of them read configuration from
the folder they work in or from the user's home, and the state may be either. git run
by test.sh in the work dir reads the repository's ``.git/config`` and runs its hooks: a
``clean`` filter there runs a program of the agent's inside the verifier, with the
verifier's rights and its answer key in reach. Shells read start-up files from
``$HOME``, and curl, pip, npm, ssh and others read rc files there.

git offers no way to be told to ignore a repository's own configuration, and a test may
start a login shell or any tool; so what would be obeyed is found in the state's
archives, before the tests run, and is the agent's ``tamper``, named with its path and
key (`ToolConfig`). Found, not run: git's configuration syntax is parsed here
(`git_config`), nothing of the agent's is executed, and every read is of a member of the
checked archive, bounded in size, links never followed.

What is found:

- in every git directory of the state (a ``.git`` folder, a folder git would take for a
  bare repository, and where a ``.git`` file or a ``commondir`` leads inside the state):
  `config` and ``config.worktree`` settings that run a program or lead git elsewhere
  (`GIT_RULES`), executable hooks named as git hooks (`HOOK_NAMES`), and a ``.git``
  file, ``commondir``, ``config`` or ``hooks`` that leads out of the state or is a link;
- in the home folders of the verifier's user (``homes``) the state holds: git's global
  configuration (judged by the same rules and `GLOBAL_ONLY_RULES`), and shells'
  start-up files and tools' rc files (`HOME_FILES`) that differ from the pristine
  image's own (``pristine``, read by the caller before the state was installed);
- a configuration file git could not read as the agent left it (`git_config.MalformedConfig`),
  or one over the size cap: git would refuse or misread it, so it is not judged as data.

Whoever wrote it, a git setting of the state is judged as it will be installed: a task
image that ships such a setting in its work dir has every rollout flagged, which its
oracle run shows at once. A home's rc files are compared with the image's own, since
every Debian image ships a ``.bashrc`` and a ``.profile`` in ``/root``. What the task
asks for by naming it in its declared state (``/root/.gitconfig``, ``/app/.git/hooks``)
is the task's business, not flagged (`find`).
"""

from __future__ import annotations

import contextlib
import posixpath
import tarfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import IO

from cleanroom.core.paths import under, under_any
from cleanroom.verifiers.container.agent_state import git_config
from cleanroom.verifiers.container.agent_state.git_config import Setting
from cleanroom.verifiers.container.decision.config_findings import ConfigKind, ToolConfig

# The largest configuration file read; an honest one is a few KiB.
MAX_CONFIG_BYTES = 1 << 20
# Bytes read from the archives in all; past it the rest is flagged unread.
MAX_READ_BYTES = 32 << 20
# git directories judged in one state; more is the agent's, unread.
MAX_GIT_DIRS = 1000
# Members noted for a closer look (their names match what git or a home would read).
MAX_NOTED = 200_000
# A ``.git`` file or a ``commondir`` is one short line.
MAX_POINTER_BYTES = 4096


# git's settings that run a program or lead git to other files, from git-config(1)
# (git 2.39 to 2.47). A section and name, with whether a subsection is required
# (True), forbidden (False) or either (None). A value rule below narrows a few.
_PROGRAM = "runs a program"
_ELSEWHERE = "leads git elsewhere"
GIT_RULES: Mapping[tuple[str, str], tuple[bool | None, str]] = {
    ("core", "fsmonitor"): (False, _PROGRAM),  # a hook path; "true": a daemon
    ("core", "hookspath"): (False, _ELSEWHERE),
    ("core", "pager"): (False, _PROGRAM),
    ("core", "editor"): (False, _PROGRAM),
    ("core", "sshcommand"): (False, _PROGRAM),
    ("core", "askpass"): (False, _PROGRAM),
    ("core", "gitproxy"): (False, _PROGRAM),
    ("core", "alternaterefscommand"): (False, _PROGRAM),
    ("core", "worktree"): (False, _ELSEWHERE),
    ("diff", "external"): (False, _PROGRAM),
    ("diff", "textconv"): (True, _PROGRAM),
    ("diff", "command"): (True, _PROGRAM),
    ("difftool", "cmd"): (True, _PROGRAM),
    ("difftool", "path"): (True, _PROGRAM),
    ("mergetool", "cmd"): (True, _PROGRAM),
    ("mergetool", "path"): (True, _PROGRAM),
    ("merge", "driver"): (True, _PROGRAM),
    ("filter", "clean"): (True, _PROGRAM),
    ("filter", "smudge"): (True, _PROGRAM),
    ("filter", "process"): (True, _PROGRAM),
    ("sequence", "editor"): (False, _PROGRAM),
    ("interactive", "difffilter"): (False, _PROGRAM),
    ("credential", "helper"): (None, _PROGRAM),
    ("gpg", "program"): (None, _PROGRAM),  # gpg.program, gpg.<format>.program
    ("gpg", "defaultkeycommand"): (True, _PROGRAM),  # gpg.ssh.defaultKeyCommand
    ("gpg", "allowedsignersfile"): (True, _ELSEWHERE),
    ("gpg", "revocationfile"): (True, _ELSEWHERE),
    ("uploadpack", "packobjectshook"): (False, _PROGRAM),
    ("include", "path"): (False, _ELSEWHERE),
    ("includeif", "path"): (True, _ELSEWHERE),
    ("remote", "uploadpack"): (True, _PROGRAM),
    ("remote", "receivepack"): (True, _PROGRAM),
    ("remote", "proxy"): (True, _ELSEWHERE),
    ("http", "proxy"): (None, _ELSEWHERE),
    ("tar", "command"): (True, _PROGRAM),
    ("trailer", "command"): (True, _PROGRAM),
    ("trailer", "cmd"): (True, _PROGRAM),
    ("sendemail", "sendmailcmd"): (None, _PROGRAM),
    ("sendemail", "smtpserver"): (None, _PROGRAM),  # a path is run as sendmail
    ("sendemail", "tocmd"): (None, _PROGRAM),
    ("sendemail", "cccmd"): (None, _PROGRAM),
    ("sendemail", "headercmd"): (None, _PROGRAM),
    ("imap", "tunnel"): (False, _PROGRAM),
    ("browser", "cmd"): (True, _PROGRAM),
    ("browser", "path"): (True, _PROGRAM),
    ("man", "cmd"): (True, _PROGRAM),
    ("man", "path"): (True, _PROGRAM),
    ("guitool", "cmd"): (True, _PROGRAM),
    ("instaweb", "httpd"): (False, _PROGRAM),
    ("hook", "command"): (True, _PROGRAM),  # hooks named in configuration
}
# Read by git from the user's (global) configuration only, never a repository's.
GLOBAL_ONLY_RULES: Mapping[tuple[str, str], tuple[bool | None, str]] = {
    ("init", "templatedir"): (False, _ELSEWHERE),  # hooks copied into every new repository
    ("trace2", "normaltarget"): (False, _ELSEWHERE),  # git writes where these name
    ("trace2", "perftarget"): (False, _ELSEWHERE),
    ("trace2", "eventtarget"): (False, _ELSEWHERE),
}

# githooks(5): the names git runs from a repository's hooks folder.
HOOK_NAMES = frozenset(
    {
        "applypatch-msg",
        "pre-applypatch",
        "post-applypatch",
        "pre-commit",
        "pre-merge-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "pre-rebase",
        "post-checkout",
        "post-merge",
        "pre-push",
        "pre-receive",
        "update",
        "proc-receive",
        "post-receive",
        "post-update",
        "reference-transaction",
        "push-to-checkout",
        "pre-auto-gc",
        "post-rewrite",
        "sendemail-validate",
        "fsmonitor-watchman",
        "p4-changelist",
        "p4-prepare-changelist",
        "p4-post-changelist",
        "p4-pre-submit",
        "post-index-change",
    }
)

# git's global configuration, below a home.
GIT_GLOBAL_FILES = (".gitconfig", ".config/git/config")


class Reader(Enum):
    """Who reads a home's file: a shell (start-up files) or another tool (rc files)."""

    SHELL = ConfigKind.START_UP_FILE
    TOOL = ConfigKind.RC_FILE


# Files below a home that a shell or a common tool reads on its own, by the tool: shells
# as login or interactive shells (zsh reads .zshenv always), the others whenever they
# run (curl, wget, pip, npm, ssh...) or start (R, psql, sqlite3, gdb).
HOME_FILES: Mapping[str, tuple[Reader, str]] = {
    ".profile": (Reader.SHELL, "sh, bash, dash"),
    ".bash_profile": (Reader.SHELL, "bash"),
    ".bash_login": (Reader.SHELL, "bash"),
    ".bash_logout": (Reader.SHELL, "bash"),
    ".bashrc": (Reader.SHELL, "bash"),
    ".bash_aliases": (Reader.SHELL, "bash (Debian's .bashrc)"),
    ".zshenv": (Reader.SHELL, "zsh"),
    ".zprofile": (Reader.SHELL, "zsh"),
    ".zshrc": (Reader.SHELL, "zsh"),
    ".zlogin": (Reader.SHELL, "zsh"),
    ".zlogout": (Reader.SHELL, "zsh"),
    ".kshrc": (Reader.SHELL, "ksh"),
    ".mkshrc": (Reader.SHELL, "mksh"),
    ".cshrc": (Reader.SHELL, "csh"),
    ".tcshrc": (Reader.SHELL, "tcsh"),
    ".login": (Reader.SHELL, "csh"),
    ".logout": (Reader.SHELL, "csh"),
    ".config/fish/config.fish": (Reader.SHELL, "fish"),
    ".inputrc": (Reader.SHELL, "readline"),
    ".editrc": (Reader.SHELL, "libedit"),
    ".curlrc": (Reader.TOOL, "curl"),
    ".config/.curlrc": (Reader.TOOL, "curl"),
    ".wgetrc": (Reader.TOOL, "wget"),
    ".config/wget/wgetrc": (Reader.TOOL, "wget2"),
    ".netrc": (Reader.TOOL, "curl, Python's netrc and requests, ftp"),
    ".npmrc": (Reader.TOOL, "npm"),
    ".yarnrc": (Reader.TOOL, "yarn"),
    ".yarnrc.yml": (Reader.TOOL, "yarn"),
    ".config/pip/pip.conf": (Reader.TOOL, "pip"),
    ".pip/pip.conf": (Reader.TOOL, "pip"),
    ".pydistutils.cfg": (Reader.TOOL, "setuptools"),
    ".condarc": (Reader.TOOL, "conda"),
    ".config/uv/uv.toml": (Reader.TOOL, "uv"),
    ".ssh/config": (Reader.TOOL, "ssh"),
    ".ssh/rc": (Reader.TOOL, "ssh"),
    ".cargo/config": (Reader.TOOL, "cargo"),
    ".cargo/config.toml": (Reader.TOOL, "cargo"),
    ".Rprofile": (Reader.TOOL, "R"),
    ".Renviron": (Reader.TOOL, "R"),
    ".psqlrc": (Reader.TOOL, "psql"),
    ".sqliterc": (Reader.TOOL, "sqlite3"),
    ".my.cnf": (Reader.TOOL, "mysql"),
    ".gemrc": (Reader.TOOL, "gem"),
    ".irbrc": (Reader.TOOL, "irb"),
    ".gdbinit": (Reader.TOOL, "gdb"),
    ".vimrc": (Reader.TOOL, "vim"),
    ".exrc": (Reader.TOOL, "vi"),
    ".nanorc": (Reader.TOOL, "nano"),
    ".lesskey": (Reader.TOOL, "less"),
    ".config/lesskey": (Reader.TOOL, "less"),
    ".mailcap": (Reader.TOOL, "mailcap users"),
    ".hgrc": (Reader.TOOL, "hg"),
    ".subversion/config": (Reader.TOOL, "svn"),
    ".m2/settings.xml": (Reader.TOOL, "maven"),
    ".gradle/gradle.properties": (Reader.TOOL, "gradle"),
    ".gradle/init.gradle": (Reader.TOOL, "gradle"),
    ".docker/config.json": (Reader.TOOL, "docker"),
    ".kube/config": (Reader.TOOL, "kubectl"),
    ".aws/config": (Reader.TOOL, "aws"),
    ".terraformrc": (Reader.TOOL, "terraform"),
    ".config/matplotlib/matplotlibrc": (Reader.TOOL, "matplotlib"),
    ".julia/config/startup.jl": (Reader.TOOL, "julia"),
    ".octaverc": (Reader.TOOL, "octave"),
}
# Folders below a home whose every file a tool runs; their files are flagged whatever
# the image held (the pristine image cannot be listed there once the state is in).
HOME_FOLDERS: Mapping[str, str] = {
    ".gradle/init.d": "gradle",
    ".config/fish/conf.d": "fish",
    ".ipython/profile_default/startup": "ipython",
}


class MemberKind(Enum):
    """What a noted member is, as the tools that would read it care."""

    FILE = "file"
    FOLDER = "folder"
    LINK = "link"
    OTHER = "other"  # a FIFO, a device: a reader blocks or fails on it


@dataclass(frozen=True)
class Member:
    """A noted member of the state, by its installed path: its kind, permission bits and
    size; for a link, its target. ``read`` gives up to ``n`` bytes of a file's content."""

    kind: MemberKind
    mode: int = 0
    size: int = 0
    target: str = ""
    read: Callable[[int], bytes] | None = None


def verifier_homes(user: str | None, home: str | None) -> list[str]:
    """The home folders the verifier's user may have: root's, the ``HOME`` the task's
    verifier environment sets, and ``/home/<user>`` for a named user other than root."""
    homes = ["/root"]
    if home and home.startswith("/"):
        homes.append(posixpath.normpath(home))
    name = (user or "").split(":", 1)[0]
    if name and not name.isdigit() and name != "root" and "/" not in name:
        homes.append(f"/home/{name}")
    return sorted(set(homes))


def home_files(homes: Sequence[str]) -> list[str]:
    """Every start-up and rc file whose pristine content the caller reads, below the
    ``homes`` (those in the state)."""
    return [posixpath.join(h, rel) for h in homes for rel in HOME_FILES]


def worth_reading(state: Sequence[tuple[str, Iterable[str]]], homes: Sequence[str]) -> bool:
    """Whether the state, each path with its archive's folder and link names (as
    `state_archive.StateScan.tree` has them), may hold anything `find_in_archives`
    finds: a home folder, or a name a git directory needs (``.git``, and the ``objects``
    and ``refs`` every repository git accepts has, itself or through its ``commondir``).
    A state with neither is not read again: git finds no repository of the agent's in
    it (one whose common directory is the image's has the image's configuration)."""
    for path, names in state:
        if any(under(h, path) or under(path, h) for h in homes):
            return True
        if any(n.rpartition("/")[2] in _REPOSITORY_NAMES for n in names):
            return True
    return False


def find_in_archives(
    archives: Sequence[tuple[str, IO[bytes]]],
    homes: Sequence[str],
    pristine: Mapping[str, bytes],
    named: Sequence[str] = (),
) -> list[ToolConfig]:
    """The configuration a verifier's tool would obey in the state's checked archives,
    each ``(state path, archive)``; ``pristine`` holds the image's own start-up and rc
    files below ``homes`` (a file it lacks was not in the image); ``named`` are the state
    paths the task itself declares (see `find`). Never raises for what an archive
    holds: what cannot be read is itself found (`ConfigKind.UNREADABLE`).
    Its cost is one pass over each archive's member headers, its data skipped."""
    with contextlib.ExitStack() as open_archives:
        noted: dict[str, Member] = {}
        found: list[ToolConfig] = []
        interesting = _Interest(homes)
        for path, archive in archives:
            try:
                tar = open_archives.enter_context(_opened(archive))
                for name, member in _noted(tar, path, interesting):
                    if len(noted) >= MAX_NOTED:
                        found.append(_unread(path, f"over {MAX_NOTED} files git or a shell reads"))
                        break
                    noted[name] = member
            except (tarfile.TarError, EOFError, OSError) as exc:
                found.append(_unread(path, f"its archive could not be read again: {exc}"))
        roots = [path for path, _ in archives]
        found += find(noted, roots, homes, pristine, named)
    return sorted(set(found))


def find(
    noted: Mapping[str, Member],
    roots: Sequence[str],
    homes: Sequence[str],
    pristine: Mapping[str, bytes],
    named: Sequence[str] = (),
) -> list[ToolConfig]:
    """The configuration among ``noted`` members (by installed path) of a state whose
    paths are ``roots``: git's, and the homes' (see the module's docstring).

    A setting, hook or file the task asked for is its own business: one at or below a
    path of ``named`` (the state the task declares) that is the file itself or a folder
    inside the git directory or home holding it (``/root/.gitconfig``,
    ``/app/.git/hooks``). What comes with a broader path (the work dir, a home, a folder
    the agent created) is the agent's configuration."""
    budget = _Budget(MAX_READ_BYTES)
    named = [posixpath.normpath(d) for d in named]
    found = _git(noted, roots, budget, named)
    for home in homes:
        found += _not_named(_home(noted, home, pristine, budget), home, named)
    return found


def _not_named(found: list[ToolConfig], place: str, named: Sequence[str]) -> list[ToolConfig]:
    """``found`` less what a declared path inside ``place`` (a git directory, a home)
    carries."""
    inside = [d for d in named if d != place and under(d, place)]
    return [f for f in found if not under_any(f.path, inside)]


@dataclass
class _Budget:
    left: int

    def read(self, member: Member, cap: int) -> bytes | None:
        """Up to ``cap`` bytes of a file; None when it is longer or the budget is spent."""
        if member.read is None or member.size > cap or member.size > self.left:
            return None
        self.left -= member.size
        data = member.read(member.size)
        return data if len(data) == member.size else None


def _git(
    noted: Mapping[str, Member], roots: Sequence[str], budget: _Budget, named: Sequence[str]
) -> list[ToolConfig]:
    found: list[ToolConfig] = []
    # A repository's folders may be links (git follows them), and so may its HEAD.
    folders = {p for p, m in noted.items() if m.kind in (MemberKind.FOLDER, MemberKind.LINK)}
    pending: list[str] = []
    for path, member in noted.items():
        name = posixpath.basename(path)
        if name == ".git":
            if member.kind is MemberKind.FOLDER:
                pending.append(path)
            else:
                pending += _pointer(path, member, "gitdir:", roots, budget, found)
        elif (
            name == "HEAD"
            and member.kind in (MemberKind.FILE, MemberKind.LINK)
            and {posixpath.join(posixpath.dirname(path), d) for d in ("objects", "refs")} <= folders
        ):
            pending.append(posixpath.dirname(path))  # git takes it for a bare repository
    seen: set[str] = set()
    while pending:
        gitdir = pending.pop()
        if gitdir in seen:
            continue
        if len(seen) >= MAX_GIT_DIRS:
            found.append(_unread(gitdir, f"over {MAX_GIT_DIRS} git directories in the state"))
            break
        seen.add(gitdir)
        common = noted.get(posixpath.join(gitdir, "commondir"))
        if common is not None:
            pending += _pointer(
                posixpath.join(gitdir, "commondir"), common, "", roots, budget, found, gitdir
            )
        found += _not_named(_git_dir(noted, gitdir, budget), gitdir, named)
    return found


def _git_dir(noted: Mapping[str, Member], gitdir: str, budget: _Budget) -> list[ToolConfig]:
    found: list[ToolConfig] = []
    for name in ("config", "config.worktree"):
        path = posixpath.join(gitdir, name)
        member = noted.get(path)
        if member is not None:
            found += _config_file(path, member, budget, global_file=False)
    hooks = posixpath.join(gitdir, "hooks")
    hooks_member = noted.get(hooks)
    if hooks_member is not None and hooks_member.kind is MemberKind.LINK:
        why = f"a link to {hooks_member.target[:200]}: git runs the hooks it leads to"
        found.append(ToolConfig(hooks, ConfigKind.GIT_REDIRECT, "hooks", why))
    for hook in sorted(HOOK_NAMES):
        path = posixpath.join(hooks, hook)
        member = noted.get(path)
        if member is None:
            continue
        if member.kind is MemberKind.LINK:
            found.append(ToolConfig(path, ConfigKind.GIT_HOOK, hook, "a link git would run"))
        elif member.kind is MemberKind.FILE and member.mode & 0o111:
            found.append(ToolConfig(path, ConfigKind.GIT_HOOK, hook, "executable: git runs it"))
    return found


def _pointer(
    path: str,
    member: Member,
    prefix: str,
    roots: Sequence[str],
    budget: _Budget,
    found: list[ToolConfig],
    base: str | None = None,
) -> list[str]:
    """Where a ``.git`` file (``gitdir: <dir>``) or a ``commondir`` leads: the git
    directory inside the state it names, or a finding when it leads out or is not a
    plain file."""
    key = posixpath.basename(path)
    if member.kind is MemberKind.LINK:
        why = f"a link to {member.target[:200]}: git follows it"
        found.append(ToolConfig(path, ConfigKind.GIT_REDIRECT, key, why))
        return []
    if member.kind is not MemberKind.FILE:
        return []  # git refuses it, and reads nothing
    data = budget.read(member, MAX_POINTER_BYTES)
    if data is None:
        found.append(_unread(path, f"over {MAX_POINTER_BYTES} bytes", key))
        return []
    text = data.decode("utf-8", "surrogateescape").strip()
    if not text.startswith(prefix):
        return []  # git refuses the repository, and reads nothing of it
    target = text[len(prefix) :].strip()
    if not target:
        return []
    leads = posixpath.normpath(
        posixpath.join(base if base is not None else posixpath.dirname(path), target)
    )
    if not under_any(leads, roots):
        why = f"leads to {leads[:200]}, outside the state"
        found.append(ToolConfig(path, ConfigKind.GIT_REDIRECT, key, why))
        return []
    return [leads]


def _config_file(
    path: str, member: Member, budget: _Budget, *, global_file: bool
) -> list[ToolConfig]:
    key = posixpath.basename(path)
    if member.kind is MemberKind.LINK:
        why = f"a link to {member.target[:200]}: git reads what it leads to"
        return [ToolConfig(path, ConfigKind.GIT_REDIRECT, key, why)]
    if member.kind is MemberKind.OTHER:
        return [_unread(path, "not a regular file: git blocks or fails on it", key)]
    if member.kind is not MemberKind.FILE:
        return []
    data = budget.read(member, MAX_CONFIG_BYTES)
    if data is None:
        why = f"not read: over {MAX_CONFIG_BYTES >> 20} MiB, a hard link, or past the read cap"
        return [_unread(path, why, key)]
    try:
        settings = git_config.parse(data)
    except git_config.MalformedConfig as exc:
        return [_unread(path, f"git could not read it as left ({exc})", key)]
    found = []
    for setting in settings:
        why = git_risk(setting, global_file=global_file)
        if why:
            found.append(ToolConfig(path, ConfigKind.GIT_SETTING, setting.key[:200], why))
    return found


def git_risk(setting: Setting, *, global_file: bool = False) -> str:
    """Why git would run a program or read elsewhere for ``setting`` (empty: it would
    not); ``global_file`` for the user's configuration, which git reads a few more
    settings from."""
    section, sub, name, value = setting.section, setting.subsection, setting.name, setting.value
    rule = GIT_RULES.get((section, name))
    if rule is None and global_file:
        rule = GLOBAL_ONLY_RULES.get((section, name))
    if section == "alias" or (section == "submodule" and name == "update"):
        # An alias or a submodule update starting with "!" is a shell command.
        return _PROGRAM if value is not None and value.lstrip().startswith("!") else ""
    if section == "pager" and sub is None:
        # pager.<command>: a boolean turns the pager on or off, anything else is one.
        return _PROGRAM if git_config.maybe_bool(value) is None else ""
    if section == "protocol" and name == "allow":
        # Allowing a transport such as ext:: lets a remote's URL run a command.
        return "" if (value or "").lower() == "never" else _PROGRAM
    if rule is None:
        return ""
    needs_sub, why = rule
    if needs_sub is not None and needs_sub != (sub is not None):
        return ""
    if (section, name) == ("core", "fsmonitor") and git_config.maybe_bool(value) is False:
        return ""
    if (section, name) == ("credential", "helper") and value == "":
        return ""  # an empty helper clears the list
    return why


def _home(
    noted: Mapping[str, Member], home: str, pristine: Mapping[str, bytes], budget: _Budget
) -> list[ToolConfig]:
    found: list[ToolConfig] = []
    for rel in GIT_GLOBAL_FILES:
        path = posixpath.join(home, rel)
        member = noted.get(path)
        if member is not None:
            found += _config_file(path, member, budget, global_file=True)
    for rel, (reader, tool) in HOME_FILES.items():
        path = posixpath.join(home, rel)
        member = noted.get(path)
        if member is None or member.kind is MemberKind.FOLDER:
            continue
        why = _changed(member, pristine.get(path), budget)
        if why:
            found.append(ToolConfig(path, reader.value, tool, why))
    for rel, tool in HOME_FOLDERS.items():
        folder = posixpath.join(home, rel)
        for path, member in noted.items():
            if posixpath.dirname(path) == folder and member.kind is not MemberKind.FOLDER:
                found.append(ToolConfig(path, ConfigKind.RC_FILE, tool, f"{tool} runs it"))
    return found


def _changed(member: Member, pristine: bytes | None, budget: _Budget) -> str:
    """Why a home's file is the agent's configuration ("" when it is the image's own)."""
    if member.kind is MemberKind.LINK:
        return f"a link to {member.target[:200]}"
    if member.kind is MemberKind.OTHER:
        return "not a regular file: a reader blocks or fails on it"
    if pristine is None:
        return "not in the image"
    if member.size != len(pristine):
        return "differs from the image's"
    data = budget.read(member, MAX_CONFIG_BYTES)
    return "" if data == pristine else "differs from the image's"


def _unread(path: str, why: str, key: str = "") -> ToolConfig:
    return ToolConfig(path, ConfigKind.UNREADABLE, key, why)


_REPOSITORY_NAMES = frozenset({".git", "objects", "refs"})


class _Interest:
    """Which installed paths are worth noting: names git reads in a git directory, the
    folders that make one, and the homes' files."""

    GIT_NAMES = frozenset({".git", "HEAD", "config", "config.worktree", "commondir"})
    GIT_FOLDERS = frozenset({"objects", "refs", "hooks"})

    def __init__(self, homes: Sequence[str]) -> None:
        home_files = (*HOME_FILES, *GIT_GLOBAL_FILES)
        self.home_paths = {posixpath.join(h, rel) for h in homes for rel in home_files}
        self.home_folders = {posixpath.join(h, rel) for h in homes for rel in HOME_FOLDERS}
        # The last names any noted member can have, or its folder can: most members of
        # a large state are passed over on these alone.
        self.names = (
            self.GIT_NAMES
            | self.GIT_FOLDERS
            | HOOK_NAMES
            | {posixpath.basename(r) for r in home_files}
        )
        self.folder_names = {posixpath.basename(r) for r in HOME_FOLDERS}

    def may_want(self, member_name: str) -> bool:
        head, _, name = member_name.rstrip("/").rpartition("/")
        return name in self.names or head.rpartition("/")[2] in self.folder_names

    def wants(self, path: str, kind: MemberKind) -> bool:
        name = posixpath.basename(path)
        parent = posixpath.dirname(path)
        return (
            name in self.GIT_NAMES
            or (name in self.GIT_FOLDERS and kind in (MemberKind.FOLDER, MemberKind.LINK))
            or (posixpath.basename(parent) == "hooks" and name in HOOK_NAMES)
            or path in self.home_paths
            or parent in self.home_folders
        )


@contextlib.contextmanager
def _opened(archive: IO[bytes]) -> Iterator[tarfile.TarFile]:
    archive.seek(0)
    try:
        # The archive is a seekable file: members' data is skipped, not read.
        with tarfile.open(fileobj=archive, mode="r:") as tar:
            yield tar
    finally:
        archive.seek(0)


def _noted(
    tar: tarfile.TarFile, state_path: str, interest: _Interest
) -> Iterator[tuple[str, Member]]:
    parent = posixpath.dirname(state_path.rstrip("/")) or "/"
    while (info := tar.next()) is not None:
        if interest.may_want(info.name):
            kind = _kind(info)
            path = posixpath.normpath(posixpath.join(parent, info.name))
            if interest.wants(path, kind):
                yield path, Member(kind, info.mode, info.size, info.linkname, _reader(tar, info))
        # Nothing of a member is kept once it is judged uninteresting: a state of a
        # million files costs no memory here.
        tar.members.clear()  # type: ignore[attr-defined]


def _reader(tar: tarfile.TarFile, info: tarfile.TarInfo) -> Callable[[int], bytes] | None:
    if not info.isreg():
        return None

    def read(n: int) -> bytes:
        try:
            extracted = tar.extractfile(info)
            return extracted.read(n) if extracted is not None else b""
        except (tarfile.TarError, EOFError, OSError):
            return b""

    return read


def _kind(info: tarfile.TarInfo) -> MemberKind:
    if info.isreg():
        return MemberKind.FILE
    if info.isdir():
        return MemberKind.FOLDER
    if info.issym():
        return MemberKind.LINK
    if info.islnk():
        return MemberKind.FILE  # a hard link to another member of the state
    return MemberKind.OTHER
