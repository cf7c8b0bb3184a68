"""The image's ``/logs`` inputs are staged for the agent's tmpfs without the verifier's
and the agent's log folders, which start empty as in Harbor."""

from __future__ import annotations

import io
import tarfile

from cleanroom.verifiers.container.runtime.docker.tar import renamed_top


def _tar(names: list[str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in names:
            if name.endswith("/"):
                info = tarfile.TarInfo(name.rstrip("/"))
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                data = name.encode()
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_inputs_are_renamed_and_the_verifiers_folders_left_out() -> None:
    archive = _tar(
        [
            "logs/",
            "logs/inputs/",
            "logs/inputs/a.txt",
            "logs/verifier/",
            "logs/verifier/reward.txt",
            "logs/agent/x",
            "logs/verifierish.txt",
        ]
    )
    out = renamed_top(archive, "stage", skip=("logs/verifier", "logs/agent"))
    with tarfile.open(fileobj=io.BytesIO(out)) as tar:
        names = tar.getnames()
        member = tar.extractfile("stage/inputs/a.txt")
        assert member is not None and member.read() == b"logs/inputs/a.txt"
    assert names == ["stage", "stage/inputs", "stage/inputs/a.txt", "stage/verifierish.txt"]
