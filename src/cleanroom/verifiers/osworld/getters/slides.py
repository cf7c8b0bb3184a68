"""OSWorld's getters of media in a presentation: a slide's audio and background image.

A relationship of the slide points at the file: inside the .pptx (a target starting with
``..``), which is extracted into the task cache, or linked (``file://``), which is read
from the guest like ``vm_file``. OSWorld crashes on a presentation it cannot read (no zip,
broken XML, a relationship without a type or pointing at no member); here that is what
the agent left, so it scores 0 (`UnreadableResult`). A linked file is read only beneath
the guest's home: elsewhere it could be a file of the checker's own.
"""

from __future__ import annotations

import io
import posixpath
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cleanroom.host_files import READ_CAP_BYTES
from cleanroom.verifiers.osworld.cached_file import CachedFile
from cleanroom.verifiers.osworld.getters.core import (
    GetterContext,
    GetterFailed,
    UnreadableResult,
    cache_write,
    get_vm_file,
)
from cleanroom.verifiers.osworld.task_cache import CacheNameError

_PRESENTATION = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_DRAWING = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_EMBED = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"
_RELATIONSHIPS = {"r": "http://schemas.openxmlformats.org/package/2006/relationships"}


@dataclass(frozen=True)
class Member:
    """A file inside the presentation (its name in the zip)."""

    name: str


@dataclass(frozen=True)
class Linked:
    """A file outside the presentation, at a path of the guest."""

    path: str


def _read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    with archive.open(name) as fh:
        data = fh.read(READ_CAP_BYTES + 1)
    if len(data) > READ_CAP_BYTES:
        raise ValueError(f"{name} is over {READ_CAP_BYTES} bytes unpacked")
    return data


def _target(archive: zipfile.ZipFile, slide: int, wanted: Callable[[Any], bool]) -> Any:
    """The first relationship of the slide that ``wanted`` accepts, as OSWorld takes it."""
    rels = f"ppt/slides/_rels/slide{slide + 1}.xml.rels"
    if rels not in archive.namelist():
        return None
    root = ET.fromstring(_read_member(archive, rels))
    for rel in root.findall("r:Relationship", _RELATIONSHIPS):
        if not wanted(rel):
            continue
        target = rel.attrib["Target"]
        if target.startswith(".."):
            return Member(posixpath.normpath(posixpath.join("ppt/slides", target)))
        if not target.startswith("file://"):
            raise ValueError(f"relationship target {target!r} is neither inside nor a file URL")
        return Linked(target[len("file://") :])
    return None


def audio_target(archive: zipfile.ZipFile, slide: int) -> Member | Linked | None:
    """Where the slide's first audio relationship points, or None."""
    return _target(archive, slide, lambda rel: "audio" in rel.attrib["Type"])


def background_target(archive: zipfile.ZipFile, slide: int) -> Member | Linked | None:
    """Where the slide's background picture is, or None when it has none."""
    name = f"ppt/slides/slide{slide + 1}.xml"
    if name not in archive.namelist():
        return None
    image_id = None
    for background in ET.fromstring(_read_member(archive, name)).iter(f"{_PRESENTATION}bgPr"):
        # OSWorld looks at the first picture of each background only.
        first = next(background.iter(f"{_DRAWING}blip"), None)
        if first is not None and _EMBED in first.attrib:
            image_id = first.attrib[_EMBED]
            break
    if image_id is None:
        return None
    return _target(
        archive,
        slide,
        lambda rel: "image" in rel.attrib["Type"] and rel.attrib["Id"] == image_id,
    )


def _slide_media(
    ctx: GetterContext,
    config: dict[str, Any],
    find: Callable[[zipfile.ZipFile, int], Member | Linked | None],
) -> CachedFile | None:
    try:
        path, dest = str(config["ppt_file_path"]), config["dest"]
        slide = int(config["slide_index"])
    except (KeyError, TypeError, ValueError) as exc:
        raise GetterFailed(
            f"a slide getter needs ppt_file_path, slide_index and dest: {exc}"
        ) from exc
    data = ctx.guest.read_file(path)
    cache_write(ctx, posixpath.basename(path), data)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            found = find(archive, slide)
            media = _read_member(archive, found.name) if isinstance(found, Member) else None
    except Exception as exc:  # whatever is wrong with it, the agent's file was: 0
        raise UnreadableResult(f"{path} cannot be read as a presentation: {exc}") from exc
    if isinstance(found, Member):
        if found.name.startswith(("../", "/")) or found.name == "..":
            raise UnreadableResult(f"{path} points at {found.name!r}, outside itself")
        assert media is not None
        try:  # extracted as OSWorld extracts it, folders made, beside the presentation
            return ctx.cache.write(found.name, media)
        except CacheNameError as exc:
            raise UnreadableResult(f"{path} names a member {found.name!r}: {exc}") from exc
    if isinstance(found, Linked):
        if not _beneath(found.path, ctx.guest.home):
            raise FileNotFoundError(f"{path} links {found.path!r}, outside the home")
        value: CachedFile | None = get_vm_file(ctx, {"path": found.path, "dest": dest})
        return value
    return None


def _beneath(path: str, home: str) -> bool:
    resolved = posixpath.normpath(posixpath.join(home, path))
    return resolved.startswith(home.rstrip("/") + "/")


def get_audio_in_slide(ctx: GetterContext, config: dict[str, Any]) -> CachedFile | None:
    """The audio file of slide ``slide_index`` of the guest's ``ppt_file_path``, or None."""
    return _slide_media(ctx, config, audio_target)


def get_background_image_in_slide(ctx: GetterContext, config: dict[str, Any]) -> CachedFile | None:
    """The background picture of slide ``slide_index`` of ``ppt_file_path``, or None."""
    return _slide_media(ctx, config, background_target)
