"""The getters of application configs, folders, the wallpaper and slide media against
OSWorld's, on generated homes.

A difference is allowed only where a name from DELIBERATE applies, and the test says
which; where OSWorld crashes on what the agent left, cleanroom must score 0 (a
`FileNotFoundError` kind), never succeed.
"""

from __future__ import annotations

import contextlib
import io
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

pytest.importorskip("desktop_env")

from hypothesis import given
from hypothesis import strategies as st

from cleanroom.guests import local
from cleanroom.verifiers.osworld.getters.app_config import VIDEO_TYPES

from .differences import DELIBERATE
from .fake_vm import Sides
from .reference import EXAMPLES, Raised

ZERO = ("FileNotFoundError", "UnreadableResult", "NotARegularFile")

LINK = (
    "Chrome profile getters, vlc_config, gimp_config_file, shortcuts_on_desktop, "
    "vm_wallpaper: a symbolic link"
)
VLCRC_MISSING = "vlc_config: a missing vlcrc"
GIMP_MISSING = "gimp_config_file: a missing config file"
FOLDER_LINK = "list_directory: a symbolic link to a folder"
NO_FOLDER = "list_directory: a path that is no folder"
SHORTCUTS = "shortcuts_on_desktop: a desktop folder or shortcut that cannot be read"
NO_XDG_MIME = "default_video_player: xdg-mime cannot start"
WALLPAPER_UNREADABLE = "vm_wallpaper: a wallpaper file that cannot be read"
NO_GSETTINGS = "vm_wallpaper: gsettings fails"
SLIDES_UNREADABLE = (
    "audio_in_slide, background_image_in_slide: a presentation that is missing or cannot be read"
)
SLIDES_LINKED = (
    "audio_in_slide, background_image_in_slide: a linked file missing or outside the home"
)


def same(what: str, mine: Any, theirs: Any, case: Any, differ: str | None = None) -> None:
    """Equal values, or OSWorld crashed and cleanroom scores 0, or a named difference."""
    if mine == theirs:
        return
    if isinstance(theirs, Raised) and isinstance(mine, Raised) and mine.error in ZERO:
        return
    if differ is not None:
        assert differ in DELIBERATE, differ
        return
    raise AssertionError(f"{what} disagrees on {case!r}: cleanroom {mine!r}, OSWorld {theirs!r}")


def write(path: Path, data: bytes | None, kind: str = "file") -> None:
    """A file, a folder, a link to a file holding ``data``, or nothing, at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "file" and data is not None:
        path.write_bytes(data)
    elif kind == "folder":
        path.mkdir()
    elif kind == "link":
        target = path.parent / f".{path.name}.target"
        target.write_bytes(data or b"")
        path.symlink_to(target)


# --- vlc_config and gimp_config_file --------------------------------------------------

CONFIG_KINDS = st.sampled_from(["file", "file", "file", "missing", "folder", "link"])


@EXAMPLES
@given(data=st.binary(max_size=8), kind=CONFIG_KINDS, dest=st.sampled_from(["vlcrc", "sub/x"]))
def test_vlc_config(sides: Sides, data: bytes, kind: str, dest: str) -> None:
    sides.reset()
    write(sides.home / ".config/vlc/vlcrc", data, kind)
    config = {"type": "vlc_config", "dest": dest}
    mine, theirs = sides.run("vlc_config", config)
    differ = {"link": LINK, "missing": VLCRC_MISSING}.get(kind)
    if kind == "file" and dest == "sub/x":  # a dest folder the cache does not have
        assert isinstance(mine, Raised) and mine.error == "GetterFailed", mine
        return
    same("vlc_config", mine, theirs, (data, kind), differ)


@EXAMPLES
@given(
    data=st.binary(max_size=8),
    kind=CONFIG_KINDS,
    name=st.sampled_from(["gimprc", "sessionrc", "menurc"]),
)
def test_gimp_config_file(sides: Sides, data: bytes, kind: str, name: str) -> None:
    sides.reset()
    write(sides.home / ".config/GIMP/2.10" / name, data, kind)
    config = {"type": "gimp_config_file", "file_name": name, "dest": name}
    mine, theirs = sides.run("gimp_config_file", config)
    differ = None
    if kind == "link" and data:
        differ = LINK
    elif kind in ("missing", "folder", "link") and theirs is None:
        differ = GIMP_MISSING
        assert isinstance(mine, Raised) and mine.error in ZERO, mine
    same("gimp_config_file", mine, theirs, (data, kind), differ)


# --- list_directory -------------------------------------------------------------------

NAMES = st.sampled_from(["a.jpg", "b.txt", "C", "dir", "é", ".hidden", "x y"])
TREES = st.recursive(
    st.sampled_from(["file", "link to file", "link to folder", "dangling link"]),
    lambda inner: st.dictionaries(NAMES, inner, max_size=4),
    max_leaves=8,
)


def build(folder: Path, tree: Any, other: Path) -> set[str]:
    """Make ``tree`` under ``folder``; the kinds of entry made."""
    kinds: set[str] = set()
    folder.mkdir(parents=True, exist_ok=True)
    for name, node in tree.items():
        path = folder / name
        if isinstance(node, dict):
            kinds |= build(path, node, other) | {"folder"}
        elif node == "file":
            path.write_bytes(b"x")
        elif node == "link to file":
            path.symlink_to(other / "file")
        elif node == "link to folder":
            path.symlink_to(other)
        else:
            path.symlink_to(other / "nowhere")
        kinds.add(node if not isinstance(node, dict) else "folder")
    return kinds


@EXAMPLES
@given(
    tree=st.dictionaries(NAMES, TREES, max_size=5),
    form=st.sampled_from(["absolute", "absolute", "trailing slash", "relative", "missing", "file"]),
)
def test_list_directory(sides: Sides, tree: dict[str, Any], form: str) -> None:
    sides.reset()
    (sides.elsewhere / "file").write_bytes(b"y")
    (sides.elsewhere / "inner").mkdir()
    kinds = build(sides.home / "Desktop" / "cpjpg", tree, sides.elsewhere)
    (sides.home / "plain").write_bytes(b"z")
    path = {
        "absolute": str(sides.home / "Desktop" / "cpjpg"),
        "trailing slash": f"{sides.home}/Desktop/cpjpg/",
        "relative": "Desktop/cpjpg",
        "missing": str(sides.home / "nothing"),
        "file": str(sides.home / "plain"),
    }[form]
    mine, theirs = sides.run("list_directory", {"type": "list_directory", "path": path})
    differ = None
    if form in ("missing", "file"):
        assert theirs is None and isinstance(mine, Raised) and mine.error in ZERO, (mine, theirs)
        differ = NO_FOLDER
    elif "link to folder" in kinds:
        differ = FOLDER_LINK
    same("list_directory", mine, theirs, (tree, form), differ)


def test_list_directory_task_config(fresh: Sides) -> None:
    """os/23393935's config (its path made beneath the test's home)."""
    folder = fresh.home / "Desktop" / "cpjpg"
    build(folder, {"1.jpg": "file", "2.jpg": "file", "sub": {"3.jpg": "file"}}, fresh.elsewhere)
    mine, theirs = fresh.run("list_directory", {"type": "list_directory", "path": str(folder)})
    assert mine == theirs and {c["name"] for c in mine["children"]} == {"1.jpg", "2.jpg", "sub"}


# --- shortcuts_on_desktop -------------------------------------------------------------

SHORTCUT_NAMES = st.sampled_from(["a.desktop", "Chrome.desktop", "b.txt", "é.desktop", "x.DESKTOP"])
SHORTCUT = st.tuples(
    st.sampled_from(["file", "file", "file", "folder", "link"]),
    st.sampled_from([b"[Desktop Entry]\nName=A\n", b"", b"\xff\xfe", "é".encode()]),
)


@EXAMPLES
@given(
    entries=st.dictionaries(SHORTCUT_NAMES, SHORTCUT, max_size=4),
    desktop=st.sampled_from(["folder", "folder", "folder", "missing"]),
)
def test_shortcuts_on_desktop(
    sides: Sides, entries: dict[str, tuple[str, bytes]], desktop: str
) -> None:
    sides.reset()
    os.rmdir(sides.home / "Desktop") if (sides.home / "Desktop").is_dir() else None
    if desktop == "folder":
        (sides.home / "Desktop").mkdir()
        for name, (kind, data) in entries.items():
            write(sides.home / "Desktop" / name, data, kind)
    mine, theirs = sides.run("shortcuts_on_desktop", {"type": "shortcuts_on_desktop"})
    shortcut_kinds = {k for n, (k, _) in entries.items() if n.endswith(".desktop")}
    differ = None
    if desktop == "missing" or (
        isinstance(theirs, Raised) and isinstance(mine, Raised) and mine.error in ZERO
    ):
        differ = SHORTCUTS
    elif "link" in shortcut_kinds:
        differ = LINK
    same("shortcuts_on_desktop", mine, theirs, (entries, desktop), differ)


# --- default_video_player -------------------------------------------------------------

_KINDS = sorted(set(VIDEO_TYPES))
# A table names a player for some of the video types the getter asks about; the host's
# own defaults (its installed players) answer for the rest, on both sides alike.
PLAYERS = {
    "none": {},
    "vlc everywhere": {f"video/{t}": "vlc.desktop" for t in _KINDS},
    "a majority": {
        f"video/{t}": "mpv.desktop" if i % 3 == 0 else "vlc.desktop" for i, t in enumerate(_KINDS)
    },
    "a tie": {"video/mp4": "vlc.desktop", "video/webm": "mpv.desktop"},
}


@pytest.mark.parametrize("table", sorted(PLAYERS))
def test_default_video_player(fresh: Sides, table: str) -> None:
    lines = ["[Default Applications]"] + [f"{k}={v}" for k, v in PLAYERS[table].items()]
    write(fresh.home / ".config" / "mimeapps.list", ("\n".join(lines) + "\n").encode())
    mine, theirs = fresh.run("default_video_player", {"type": "default_video_player"})
    assert mine == theirs, (table, mine, theirs)
    if table in ("vlc everywhere", "a majority"):
        assert mine == "vlc.desktop\n"


# --- vm_wallpaper ---------------------------------------------------------------------


@contextlib.contextmanager
def desktop_settings(sides: Sides, **variables: str) -> Iterator[Sides]:
    """gsettings reading a plain keyfile in the home (no session bus), with these
    variables too, on both sides."""
    variables = {"GSETTINGS_BACKEND": "keyfile", **variables}
    saved = sides.vm.environment
    with (
        mock.patch.dict(os.environ, variables),
        mock.patch.object(local, "_PASS_THROUGH", (*local._PASS_THROUGH, *variables)),
    ):
        sides.vm.environment = {**saved, **variables}
        try:
            sides.reset()
            yield sides
        finally:
            sides.vm.environment = saved


@pytest.fixture
def keyfile_settings(sides: Sides) -> Iterator[Sides]:
    with desktop_settings(sides) as both:
        yield both


def set_wallpaper(sides: Sides, uri: str) -> None:
    keyfile = sides.home / ".config" / "glib-2.0" / "settings" / "keyfile"
    keyfile.parent.mkdir(parents=True, exist_ok=True)
    keyfile.write_text(f"[org/gnome/desktop/background]\npicture-uri={uri}\n")


WALLPAPERS = [
    ("a picture", "'file://{home}/pic.png'", "file", None),
    ("no file:// scheme", "'{home}/pic.png'", "file", None),
    ("a missing picture", "'file://{home}/gone.png'", "missing", WALLPAPER_UNREADABLE),
    ("a folder", "'file://{home}/pic.png'", "folder", WALLPAPER_UNREADABLE),
    ("a link", "'file://{home}/pic.png'", "link", LINK),
    ("an escaped name", "'file://{home}/my%20pic.png'", "file", WALLPAPER_UNREADABLE),
    ("empty", "''", "file", WALLPAPER_UNREADABLE),
]


@pytest.mark.parametrize(
    ("case", "uri", "kind", "differ"), WALLPAPERS, ids=[w[0] for w in WALLPAPERS]
)
def test_vm_wallpaper(
    keyfile_settings: Sides, case: str, uri: str, kind: str, differ: str | None
) -> None:
    sides = keyfile_settings
    set_wallpaper(sides, uri.format(home=sides.home))
    write(sides.home / "pic.png", b"\x89PNG picture", kind)
    (sides.home / "my pic.png").write_bytes(b"\x89PNG other")
    mine, theirs = sides.run("vm_wallpaper", {"type": "vm_wallpaper", "dest": "background.png"})
    if differ == WALLPAPER_UNREADABLE:  # OSWorld: an empty file; cleanroom: 0
        assert theirs == ("file", "background.png", b"") and mine.error in ZERO, (mine, theirs)
    same("vm_wallpaper", mine, theirs, case, differ)
    if differ is None:
        assert mine == ("file", "background.png", b"\x89PNG picture")


# --- audio_in_slide and background_image_in_slide -------------------------------------

P = "http://schemas.openxmlformats.org/presentationml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
AUDIO_TYPE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/audio"
IMAGE_TYPE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/image"


def slide_xml(background: str | None) -> bytes:
    bg = ""
    if background == "embedded":
        bg = '<p:bg><p:bgPr><a:blipFill><a:blip r:embed="rId2"/></a:blipFill></p:bgPr></p:bg>'
    elif background == "no embed":
        bg = "<p:bg><p:bgPr><a:blipFill><a:blip/></a:blipFill></p:bgPr></p:bg>"
    return (
        f'<p:sld xmlns:p="{P}" xmlns:a="{A}" xmlns:r="{R}"><p:cSld>{bg}</p:cSld></p:sld>'
    ).encode()


def rels_xml(relations: list[tuple[str, str, str]]) -> bytes:
    body = "".join(
        f'<Relationship Id="{i}" Type="{t}" Target="{target}"/>' for i, t, target in relations
    )
    return f'<Relationships xmlns="{RELS}">{body}</Relationships>'.encode()


def presentation(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


TARGETS = st.sampled_from(
    [
        "../media/m1.wav",
        "../media/gone.wav",
        "file://{home}/linked.wav",
        "file://{home}/gone.wav",
        "file://{elsewhere}/out.wav",
        "media/m1.wav",
    ]
)


@EXAMPLES
@given(
    getter=st.sampled_from(["audio_in_slide", "background_image_in_slide"]),
    target=TARGETS,
    background=st.sampled_from(["embedded", "embedded", "no embed", None]),
    other_first=st.booleans(),
    slide_index=st.sampled_from([0, 0, 0, 1, "0"]),
    shape=st.sampled_from(["pptx", "pptx", "pptx", "not a zip", "missing", "no rels", "bad xml"]),
)
def test_slide_media(
    sides: Sides,
    getter: str,
    target: str,
    background: str | None,
    other_first: bool,
    slide_index: Any,
    shape: str,
) -> None:
    sides.reset()
    (sides.home / "linked.wav").write_bytes(b"RIFF linked")
    (sides.elsewhere / "out.wav").write_bytes(b"RIFF outside")
    kind = AUDIO_TYPE if getter == "audio_in_slide" else IMAGE_TYPE
    target = target.format(home=sides.home, elsewhere=sides.elsewhere)
    relations = [("rId2", kind, target)]
    if other_first:
        relations.insert(
            0, ("rId1", AUDIO_TYPE + "x" if getter == "audio_in_slide" else kind, "../media/m2.wav")
        )
    members = {
        "ppt/slides/slide1.xml": slide_xml(background),
        "ppt/slides/_rels/slide1.xml.rels": rels_xml(relations),
        "ppt/media/m1.wav": b"RIFF inside",
        "ppt/media/m2.wav": b"RIFF second",
    }
    if shape == "no rels":
        del members["ppt/slides/_rels/slide1.xml.rels"]
    if shape == "bad xml":
        members["ppt/slides/_rels/slide1.xml.rels"] = b"<Relationships"
        members["ppt/slides/slide1.xml"] = b"<p:sld"
    data = {"not a zip": b"PK not really", "missing": None}.get(shape, presentation(members))
    pptx = sides.home / "Desktop" / "talk.pptx"
    write(pptx, data)
    config = {
        "type": getter,
        "ppt_file_path": str(pptx),
        "slide_index": slide_index,
        "dest": "media.wav",
    }
    mine, theirs = sides.run(getter, config)
    differ = None
    if shape == "missing":
        differ = SLIDES_UNREADABLE
    elif theirs is None and isinstance(mine, Raised) and mine.error in ZERO:
        differ = SLIDES_LINKED  # a linked file OSWorld could not fetch either
    elif "elsewhere" in target or str(sides.elsewhere) in target:
        differ = SLIDES_LINKED
    same(getter, mine, theirs, config, differ)


# The configs of the OSWorld-Verified tasks (paths made beneath the test's home).
SLIDE_TASKS = [
    ("c59742c0", "audio_in_slide", "Mady_and_Mia_Baseball.pptx", 0, "Baseball.mp3"),
    ("778efd0a", "audio_in_slide", "Minimalist_Business_Slides.pptx", 0, "planet.wav"),
    (
        "47f7c0ce",
        "background_image_in_slide",
        "Robotic_Workshop_Infographics.pptx",
        1,
        "landscape.png",
    ),
]


@pytest.mark.parametrize(
    ("task", "getter", "name", "index", "dest"), SLIDE_TASKS, ids=[t[0] for t in SLIDE_TASKS]
)
def test_slide_task_configs(
    fresh: Sides, task: str, getter: str, name: str, index: int, dest: str
) -> None:
    slide = index + 1
    kind = AUDIO_TYPE if getter == "audio_in_slide" else IMAGE_TYPE
    members = {
        f"ppt/slides/slide{slide}.xml": slide_xml("embedded"),
        f"ppt/slides/_rels/slide{slide}.xml.rels": rels_xml([("rId2", kind, "../media/m1.bin")]),
        "ppt/media/m1.bin": b"media bytes",
    }
    write(fresh.home / "Desktop" / name, presentation(members))
    config = {
        "type": getter,
        "ppt_file_path": str(fresh.home / "Desktop" / name),
        "slide_index": index,
        "dest": dest,
    }
    mine, theirs = fresh.run(getter, config)
    assert mine == theirs == ("file", "ppt/media/m1.bin", b"media bytes")
