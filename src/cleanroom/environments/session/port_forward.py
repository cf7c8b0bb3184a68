"""One host loopback port made reachable inside a sandbox's own network namespace.

A sandbox has its own loopback and no route out. When the harness opens a page it
serves (the verify server's form) in an environment's browser, `PortForwarder` listens
on ``127.0.0.1:PORT`` *inside* that environment's network namespace and carries each
connection to ``127.0.0.1:PORT`` on the host. Only that port, only for that sandbox, and
only until the sandbox ends: the environment reaches nothing else of the host.

The listening socket is made by a short-lived thread that joins the namespace
(``setns`` changes only the calling thread's network namespace); the socket keeps the
namespace it was made in, and everything else runs in the harness's own.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import socket
import threading
from pathlib import Path
from urllib.parse import urlsplit

from cleanroom.environments.errors import StartError

CLONE_NEWNET = 0x40000000
MAX_CONNECTIONS = 64  # per forwarded port; more are closed at once
_CHUNK = 65536
_IDLE_TIMEOUT_S = 300.0


def loopback_port(url: str) -> int | None:
    """The port of an http(s) URL on the host's loopback (None for any other URL)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.hostname not in ("127.0.0.1", "localhost"):
        return None
    try:
        return parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None


def _socket_in(netns: Path, port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1:``port`` in the network namespace ``netns``."""
    made: list[socket.socket] = []
    failure: list[BaseException] = []

    def make() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            fd = os.open(netns, os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    code = ctypes.get_errno()
                    raise OSError(code, f"setns {netns}: {os.strerror(code)}")
            finally:
                os.close(fd)
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", port))
                sock.listen(MAX_CONNECTIONS)
            except BaseException:
                sock.close()
                raise
            made.append(sock)
        except BaseException as exc:
            failure.append(exc)

    # The thread ends in the namespace it joined; it is never reused for anything else.
    worker = threading.Thread(target=make, name=f"netns-socket-{port}", daemon=True)
    worker.start()
    worker.join()
    if failure:
        raise StartError(f"cannot listen on port {port} in {netns}: {failure[0]}")
    return made[0]


class PortForwarder:
    """Connections to 127.0.0.1:``port`` in a namespace, carried to the host's same port."""

    def __init__(self, netns: Path, port: int, *, target_port: int | None = None) -> None:
        self.port = port
        self.target = ("127.0.0.1", target_port or port)
        self._listener = _socket_in(netns, port)
        self._closed = threading.Event()
        self._active = threading.Semaphore(MAX_CONNECTIONS)
        self._thread = threading.Thread(
            target=self._accept_loop, name=f"forward-{port}", daemon=True
        )
        self._thread.start()

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                inner, _ = self._listener.accept()
            except OSError:
                return  # closed
            if not self._active.acquire(blocking=False):
                inner.close()
                continue
            threading.Thread(
                target=self._carry, args=(inner,), name=f"forward-{self.port}-conn", daemon=True
            ).start()

    def _carry(self, inner: socket.socket) -> None:
        try:
            try:
                outer = socket.create_connection(self.target, timeout=10)
            except OSError:
                return
            with outer, selectors.DefaultSelector() as sel:
                peers = {inner: outer, outer: inner}
                for sock in peers:
                    sock.setblocking(False)
                    sel.register(sock, selectors.EVENT_READ)
                open_ends = 2
                while open_ends and not self._closed.is_set():
                    events = sel.select(timeout=_IDLE_TIMEOUT_S)
                    if not events:
                        return  # idle too long
                    for key, _ in events:
                        src: socket.socket = key.fileobj  # type: ignore[assignment]
                        try:
                            data = src.recv(_CHUNK)
                        except (BlockingIOError, InterruptedError):
                            continue
                        except OSError:
                            return
                        if not data:
                            sel.unregister(src)
                            with contextlib.suppress(OSError):
                                peers[src].shutdown(socket.SHUT_WR)
                            open_ends -= 1
                            continue
                        try:
                            peers[src].settimeout(30)
                            peers[src].sendall(data)
                            peers[src].setblocking(False)
                        except OSError:
                            return
        finally:
            inner.close()
            self._active.release()

    def close(self) -> None:
        """Stop listening; connections in flight end at their next read."""
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()


class ForwardedPorts:
    """The ports forwarded into one network namespace, each once, all closed together."""

    def __init__(self) -> None:
        self._by_port: dict[int, PortForwarder] = {}

    def __contains__(self, port: object) -> bool:
        return port in self._by_port

    def ports(self) -> list[int]:
        """The forwarded ports, in order."""
        return sorted(self._by_port)

    def add(self, netns: Path, port: int) -> None:
        """Forward ``port`` into ``netns`` unless it already is."""
        if port not in self._by_port:
            self._by_port[port] = PortForwarder(netns, port)

    def close(self) -> None:
        """Stop every forwarder."""
        for forwarder in self._by_port.values():
            forwarder.close()
        self._by_port.clear()
