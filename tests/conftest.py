"""What the whole suite shares: one id for this run of it, and which tests run one after
another.

`make test` runs the suite on two workers (pytest-xdist, ``--dist loadgroup``). The desktop
tests form one group, so they run one after another on one worker, as they would alone
(but for the modules marked ``beside_desktops``, which only drive OSWorld's interfaces):
each starts displays, Writers and browsers whose timing the isolation checks judge (a
third worker, tried, loaded the machine until Writer missed its start-up limits). The
tests that read the demo's run (the red-team matrix it ran) are in that group too, so
the demo runs once. The other tests (unit, Docker, Harbor, the red-team CLI, the audit,
the verify server) run beside them, on whichever worker is free. Every Docker object a
test makes is labelled with the suite's run id and its worker, so a worker removes only
its own containers, and the images, which both workers share by content, are removed
once, after both have finished.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

import pytest

# The suite's run id, set before the workers start so that every worker inherits it.
RUN_ID_VAR = "CLEANROOM_TEST_RUN"
RUN_LABEL = "cleanroom.session"
TEST_LABEL = "cleanroom.test"
WORKER_LABEL = "cleanroom.worker"
DESKTOP_GROUP = "desktop"
# The integration suites whose tests start desktop environments.
DESKTOP_SUITES = ("cluster", "environments", "harness", "isolation", "x11")
# A test elsewhere that reads the demo's run shares the session's one run of it.
DEMO_FIXTURE = "demo_run"
# A desktop suite's module marked so starts a pool of its own to drive OSWorld's interfaces
# and judges no timing between environments: it runs beside the desktop group, on the
# other worker, like a Docker test, so that the desktop group is not the whole suite's
# length.
BESIDE_MARK = "beside_desktops"

_INTEGRATION = Path(__file__).parent / "integration"


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(RUN_ID_VAR, uuid.uuid4().hex[:12])


# First: xdist's own hook reads the group marks to hand a group to one worker.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups = {item: _group(item) for item in items}
    for item, group in groups.items():
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    # The desktop group is the longest piece of work: first, so it is handed out first.
    items.sort(key=lambda item: groups[item] != DESKTOP_GROUP)


def _group(item: pytest.Item) -> str:
    path = Path(str(item.path))
    if not path.is_relative_to(_INTEGRATION) or item.get_closest_marker(BESIDE_MARK):
        return ""
    in_desktop_suite = path.relative_to(_INTEGRATION).parts[0] in DESKTOP_SUITES
    reads_the_demo = DEMO_FIXTURE in getattr(item, "fixturenames", ())
    return DESKTOP_GROUP if in_desktop_suite or reads_the_demo else ""


@pytest.fixture(scope="session")
def docker_labels() -> dict[str, str]:
    """The labels of every Docker object this worker's tests make."""
    return {TEST_LABEL: "1", RUN_LABEL: os.environ[RUN_ID_VAR], WORKER_LABEL: uuid.uuid4().hex}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return  # a worker: the process that started the workers removes the images
    with contextlib.suppress(Exception):  # no daemon, nothing to remove
        from cleanroom.verifiers.container.runtime.docker import DockerRuntime

        labels = {TEST_LABEL: "1", RUN_LABEL: os.environ[RUN_ID_VAR]}
        DockerRuntime.connect(labels).remove_labelled(labels)
