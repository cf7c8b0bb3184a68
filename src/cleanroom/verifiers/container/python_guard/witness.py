# ruff: noqa: UP006, UP035, UP045  (it runs under the image's Python, which may predate 3.9)
"""cleanroom's runner witness: a pytest plugin loaded into the sealed verifier's pytest.

The start-up hook (``sitecustomize``) loads this module under a name drawn afresh for
each verification, before pytest reads its plugins, in the one pytest process test.sh
started (not in the processes that process starts). No file of the agent's can name it
to disable it, since the name is known only once the verification runs. It appends one
JSON line per event to a file of its own in the folder ``CLEANROOM_WITNESS`` names (bound
from the host, read by the host only after the verifier's container is stopped):

- ``start``: the process is a pytest run (written by the start-up hook);
- ``configured``, ``collected`` (how many tests), ``report`` (each test's outcome, the
  first ``REPORTS_WRITTEN`` by name), ``finish`` (pytest's exit status and the counts of
  outcomes): pytest's own session, as its hooks see it;
- ``agent_outcome``: a skip, an expected failure or an exit of pytest's was raised while
  code of the agent's state (the paths ``CLEANROOM_STATE`` names) was running, with the
  file of that code and the test file being collected or run (a module under test that
  calls ``pytest.skip()`` makes the task's test a skip, and a run of skips exits 0);
- ``agent_write``: code of the agent's state touched the verifier's places while pytest
  ran (seen by an audit hook, which Python offers no way to remove): any access to the
  reward folder or the witness's own, or a change to what the task shipped in ``/tests``
  (a file opened for writing, renamed over, removed, or a folder there opened as a base
  for relative opens, or a program started with a command line naming the reward folder),
  with the file of that code and the path touched;
- ``exit``: the interpreter reached its normal end. The start-up hook registers this
  first, so it runs after every other exit handler: a handler of the agent's that ends
  the process (``os._exit``) leaves no ``exit`` record.

Every record carries the pid that wrote it. PYTEST_DONT_REWRITE: pytest would otherwise
warn that this plugin was imported before it could rewrite its asserts (it has none), a
warning that a task's ``-W error`` turns into a failed run. What the host makes of them is
``cleanroom.verifiers.container.decision.witness``.
"""

import atexit
import contextlib
import json
import os
import sys
from typing import Any, Dict, List, Optional

REPORTS_WRITTEN = 1000
_NAME_CHARS = 300

_fd: Optional[int] = None
_pid = 0
_counts: Dict[str, int] = {}
_reports = 0
# The test file being collected or run, for `agent_outcome`.
_node = ""
AGENT_OUTCOMES_WRITTEN = 100
_agent_outcomes = 0
AGENT_WRITES_WRITTEN = 100
_agent_writes = 0


def _places(key: str) -> List[str]:
    try:
        found = json.loads(os.environ.get("CLEANROOM_PLACES", "{}")).get(key, [])
    except (ValueError, AttributeError):
        return []
    return [os.path.normpath(p) for p in found if isinstance(p, str) and p.startswith("/")]


# Places no code of the agent's has any business with, and places whose shipped files it
# must not change.
_SEALED = _places("sealed")
_SHIPPED = _places("shipped")
# What the task shipped there, listed when the witness starts (a file a test makes later
# is the test's to have written over).
SHIPPED_LISTED = 20000
_shipped: "set[str]" = set()


def _list_shipped() -> None:
    for place in _SHIPPED:
        for folder, dirs, files in os.walk(place):
            for name in dirs + files:
                _shipped.add(os.path.join(folder, name))
            _shipped.add(folder)
            if len(_shipped) > SHIPPED_LISTED:
                return


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CHANGES = frozenset({"os.remove", "os.rmdir", "os.truncate", "os.chmod", "os.chown", "os.utime"})
_MADE = frozenset({"os.mkdir", "os.symlink", "os.link", "os.mkfifo", "os.mknod"})
# Programs started: a command line that names a sealed place hands it to the program.
_STARTS = frozenset({"os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn"})


def _strings(value: Any, depth: int = 0) -> List[str]:
    if isinstance(value, bytes):
        return [value.decode("utf-8", "replace")]
    if isinstance(value, str):
        return [value]
    if depth < 2 and isinstance(value, (list, tuple)):
        return [s for item in list(value)[:256] for s in _strings(item, depth + 1)]
    return []


# The agent's state paths, as the start-up hook read them (`start`).
_STATE: List[str] = []


def _agent_frame() -> Optional[str]:
    """The file of the innermost frame on the stack that is code of the agent's state."""
    frame: Any = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if _under(os.path.normpath(name), _STATE):
            return str(name)
        frame = frame.f_back
    return None


def _under(path: str, places: List[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in places)


def _path(value: Any) -> Optional[str]:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogateescape")
    if not isinstance(value, str):
        return None  # a descriptor: the open that made it was seen
    if not value:
        return None
    # The working folder is asked only for a relative path: this runs on every open.
    return os.path.normpath(value if value.startswith("/") else os.path.join(os.getcwd(), value))


def _touched(event: str, args: Any) -> Optional[str]:
    """The verifier's place ``event`` touches in a way no code of the agent's may."""
    if event == "open":
        path, mode, flags = (*tuple(args), None, None, None)[:3]
        where = _path(path)
        if where is None:
            return None
        if _under(where, _SEALED):
            return where
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if where in _shipped and (writes or (mode is None and os.path.isdir(where))):
            return where
        if writes:  # through a link: where the write lands
            real = os.path.realpath(where)
            if real != where and (_under(real, _SEALED) or real in _shipped):
                return real
        return None
    if event == "os.rename":
        for value in tuple(args)[:2]:
            where = _path(value)
            if where is None:
                continue
            real = os.path.join(os.path.realpath(os.path.dirname(where)), os.path.basename(where))
            for seen in (where, real):
                if _under(seen, _SEALED) or seen in _shipped:
                    return seen
        return None
    if event in _STARTS:
        for text in _strings(tuple(args)[:3]):
            for place in _SEALED:
                if place in text:
                    return place
        return None
    if event in _CHANGES or event in _MADE or event in ("os.listdir", "os.scandir"):
        where = _path(next(iter(args), None))
        if where is None:
            return None
        if _under(where, _SEALED):
            return where
        if event in _CHANGES and where in _shipped:
            return where
    return None


def _audit(event: str, args: Any) -> None:
    global _agent_writes
    if not (_SEALED or _SHIPPED) or _agent_writes >= AGENT_WRITES_WRITTEN:
        return
    try:
        where = _touched(event, args)
        if where is None:
            return
        origin = _agent_frame()
        if origin is None:
            return
        _agent_writes += 1
        _write("agent_write", via=event, path=where[:_NAME_CHARS], origin=origin[:_NAME_CHARS])
    except Exception:  # an audit hook that raises would fail the operation it watches
        return


def _watch(cls: Any, kind: str) -> None:
    """Note each ``cls`` made while code of the agent's is on the stack."""
    made = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        global _agent_outcomes
        made(self, *args, **kwargs)
        origin = _agent_frame()
        if origin is not None and _agent_outcomes < AGENT_OUTCOMES_WRITTEN:
            _agent_outcomes += 1
            _write("agent_outcome", kind=kind, origin=origin[:_NAME_CHARS], node=_node)

    cls.__init__ = __init__


_OUTCOMES: List[Any] = []  # (kind, class) of the exceptions that decide a test's outcome


def _watch_outcomes() -> None:
    try:
        import unittest

        import pytest
    except ImportError:
        return
    for kind, raiser in (("skip", "skip"), ("xfail", "xfail"), ("exit", "exit")):
        cls = getattr(getattr(pytest, raiser, None), "Exception", None)
        if isinstance(cls, type):
            _OUTCOMES.append((kind, cls))
    _OUTCOMES.append(("skip", unittest.SkipTest))  # pytest skips on it too
    for kind, cls in _OUTCOMES:
        _watch(cls, kind)


def _agent_frame_in(tb: Any) -> Optional[str]:
    """The file of the first frame of traceback ``tb`` that is code of the agent's."""
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if _under(os.path.normpath(name), _STATE):
            return str(name)
        tb = tb.tb_next
    return None


def _path_of(node: Any) -> str:
    path = getattr(node, "path", None) or getattr(node, "fspath", None) or ""
    return str(path)[:_NAME_CHARS]


def _write(event: str, **fields: Any) -> None:
    if _fd is None or os.getpid() != _pid:
        return  # not the witnessed process (a fork of it writes nothing)
    line = (
        json.dumps(
            dict(fields, e=event, pid=os.getpid()), separators=(",", ":"), ensure_ascii=False
        )
        + "\n"
    )
    with contextlib.suppress(OSError):
        os.write(_fd, line.encode("utf-8", "replace"))


def _exited() -> None:
    _write("exit")


def start(folder: str, argv: Any, state: List[str]) -> None:
    """Witness this process: called by the start-up hook in a process that runs pytest,
    with the agent's state paths it read."""
    global _fd, _pid
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC
    flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        _fd = os.open(os.path.join(folder, f"{os.getpid()}.jsonl"), flags, 0o644)
    except OSError:
        return
    _pid = os.getpid()
    _STATE[:] = state
    _write("start", argv=[str(a)[:_NAME_CHARS] for a in list(argv)[:32]])
    atexit.register(_exited)
    if hasattr(sys, "addaudithook"):  # Python 3.8 and later
        with contextlib.suppress(OSError):
            _list_shipped()
        sys.addaudithook(_audit)


# The witnessed run's own configuration: a session a test runs inside it (pytester's
# in-process runs) is not the run's, and its reports are not counted.
_config: Any = None
_inner = 0


def _outer(session: Any) -> bool:
    return _config is not None and getattr(session, "config", None) is _config


def pytest_configure(config: Any) -> None:
    global _config
    if _fd is None or _config is not None or getattr(config, "workerinput", None) is not None:
        return  # not witnessed, a run inside the run, or an xdist worker
    _config = config
    _write("configured")
    _watch_outcomes()


def pytest_collectstart(collector: Any) -> None:
    global _node
    _node = _path_of(collector)


def pytest_runtest_protocol(item: Any, nextitem: Any) -> None:
    global _node
    _node = _path_of(item)


def pytest_runtest_makereport(item: Any, call: Any) -> None:
    """A skip, expected failure or exit that passed through code of the agent's on its
    way up, whoever made it (the traceback itself, not the frame that made it)."""
    global _agent_outcomes
    excinfo = getattr(call, "excinfo", None)
    if excinfo is None or _fd is None:
        return
    value = getattr(excinfo, "value", None)
    for kind, cls in _OUTCOMES:
        if isinstance(value, cls):
            origin = _agent_frame_in(getattr(excinfo, "tb", None))
            if origin is not None and _agent_outcomes < AGENT_OUTCOMES_WRITTEN:
                _agent_outcomes += 1
                node = _path_of(item)
                _write("agent_outcome", kind=kind, origin=origin[:_NAME_CHARS], node=node)
            return


def pytest_sessionstart(session: Any) -> None:
    global _inner
    if _outer(session):
        _write("sessionstart")
    else:
        _inner += 1


def pytest_collection_finish(session: Any) -> None:
    if _outer(session):
        _write("collected", n=len(getattr(session, "items", ()) or ()))


def pytest_runtest_logreport(report: Any) -> None:
    global _reports
    if _inner:
        return  # a report of a run inside the run
    outcome = str(getattr(report, "outcome", "?"))[:32]
    when = str(getattr(report, "when", "?"))[:16]
    _counts[outcome] = _counts.get(outcome, 0) + 1
    _reports += 1
    if _reports <= REPORTS_WRITTEN:
        nodeid = str(getattr(report, "nodeid", ""))[:_NAME_CHARS]
        _write("report", nodeid=nodeid, when=when, outcome=outcome)


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    global _inner
    if not _outer(session):
        _inner = max(0, _inner - 1)
        return
    try:
        status: Optional[int] = int(exitstatus)
    except (TypeError, ValueError):
        status = None
    _write("finish", exitstatus=status, counts=dict(_counts), reports=_reports)
