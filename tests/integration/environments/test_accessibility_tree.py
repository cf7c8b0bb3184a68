"""The ``accessibility_tree`` observation: an environment's own AT-SPI bus as OSWorld's
XML (what its ``DesktopEnv`` gives as ``obs["accessibility_tree"]``). Two environments
run Writer at once; each one's tree holds its own document and never the other's."""

from __future__ import annotations

import re
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest

from cleanroom.environments.errors import StaleGeneration
from cleanroom.environments.interface import AccessibilityTree
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.lifecycle import wait_until

pytestmark = pytest.mark.slow

NS = "https://accessibility.ubuntu.example.org/ns"
# The namespaces OSWorld's Linux tree declares on its root, by the prefixes it uses.
NAMESPACES = {
    "st": f"{NS}/state",
    "attr": f"{NS}/attributes",
    "cp": f"{NS}/component",
    "doc": f"{NS}/document",
    "docattr": f"{NS}/document/attributes",
    "txt": f"{NS}/text",
    "val": f"{NS}/value",
    "act": f"{NS}/action",
}
ST, ATTR, CP = (f"{{{NAMESPACES[p]}}}" for p in ("st", "attr", "cp"))
ENVS = ("env01", "env02")


@pytest.fixture(scope="module")
def pool(desktop_stack: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    p = Pool(PoolConfig(envs=2, programs=("writer", "terminal")), tmp_path_factory.mktemp("a11y"))
    p.start()
    try:
        yield p
    finally:
        p.stop()


def test_each_environment_sees_its_own_writer_as_osworld_xml(pool: Pool) -> None:
    handles = {n: LocalHandle(pool, n) for n in ENVS}
    typed = {n: f"typed in {n} {uuid.uuid4().hex[:10]}" for n in ENVS}
    for name, handle in handles.items():
        handle.focus(program="writer")
        handle.type_text(typed[name])

    def trees() -> dict[str, str] | None:
        out = {n: h.accessibility_tree() for n, h in handles.items()}
        return out if all(typed[n] in out[n] for n in ENVS) else None

    seen = wait_until(trees, 30, 0.5)
    assert seen is not None, "the typed text never showed in the trees"
    for name, xml in seen.items():
        assert isinstance(xml, str)
        opening = xml[: xml.index(">")]
        assert opening.startswith("<desktop-frame ")
        for prefix, uri in NAMESPACES.items():
            assert f'xmlns:{prefix}="{uri}"' in opening
        root = ET.fromstring(xml)  # well-formed; the root declares no entities to expand
        assert root.tag == "desktop-frame"

        # Its own bus: one LibreOffice, whose frame is a Writer window.
        apps = [a for a in root if a.tag == "application"]
        assert [a.get("name") for a in apps].count("soffice") == 1
        soffice = next(a for a in apps if a.get("name") == "soffice")
        frames = [f for f in soffice if f.tag == "frame"]
        assert any("LibreOffice Writer" in (f.get("name") or "") for f in frames)

        # The document and its paragraph, with OSWorld's states, attributes and extents.
        document = root.find(".//document-text")
        assert document is not None
        assert document.get(f"{ST}editable") == "true"
        assert document.get(f"{ST}showing") == "true"
        assert re.fullmatch(r"\(-?\d+, -?\d+\)", document.get(f"{CP}screencoord") or "")
        assert re.fullmatch(r"\(\d+, \d+\)", document.get(f"{CP}size") or "")
        assert document.get(f"{ATTR}page-number") == "1"
        paragraphs = [p for p in document.iter("paragraph") if p.text]
        assert [p.text for p in paragraphs] == [typed[name]]
        assert paragraphs[0].get("name") == ""
        assert paragraphs[0].get(f"{ST}focused") == "true"
        # Menus are there too (OSWorld prunes nothing), with their actions and key bindings.
        item = next(root.iter("menu-item"))
        assert any(k.startswith(f"{{{NAMESPACES['act']}}}") for k in item.attrib)

        # Never the other environment's document.
        (other,) = (n for n in ENVS if n != name)
        assert typed[other] not in xml


def test_the_tree_is_refused_to_a_generation_the_environment_has_left(pool: Pool) -> None:
    current = pool.generation("env01")
    with pytest.raises(StaleGeneration):
        pool.observe("env01", current + 1, AccessibilityTree)
    assert isinstance(pool.observe("env01", current, AccessibilityTree).xml, str)
