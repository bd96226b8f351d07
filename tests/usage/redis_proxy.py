"""A TCP proxy in front of a test's Redis that injects one fault at the socket's edge: the
next command a predicate picks is either never delivered or delivered and run, with its reply
swallowed; then the proxy calls `on_fault` (a test SIGKILLs Redis there) and cuts the app's
connection. Everything else passes through unchanged. The fault's `on_fault` runs in one of the
proxy's threads, after the app has its answer (a timeout): a test waits for it to have returned
(`wait_handled`) before it uses Redis again."""

import socket
import threading
from collections.abc import Callable
from typing import Literal

Mode = Literal["request", "reply"]


class RedisFaultProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.armed: tuple[Mode, Callable[[bytes], bool], Callable[[], None]] | None = None
        self.faults = 0
        self.handled = 0  # faults whose on_fault has returned
        self._handled_changed = threading.Condition(self.lock)
        self.closed = False
        self.down = False  # set: every connection is refused, as if Redis were gone
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def arm(self, mode: Mode, picks: Callable[[bytes], bool], on_fault: Callable[[], None]) -> None:
        """Fault the next command whose bytes `picks` accepts: drop it (`request`), or let Redis
        run it and swallow its reply (`reply`)."""
        with self.lock:
            self.armed = (mode, picks, on_fault)

    def wait_handled(self, faults: int, timeout: float = 30) -> None:
        """Wait until `faults` faults have been injected and their on_fault has returned (a
        crashed Redis is running again)."""
        with self._handled_changed:
            if not self._handled_changed.wait_for(lambda: self.handled >= faults, timeout):
                raise TimeoutError(f"{self.handled} of {faults} faults handled in {timeout} s")

    def _fault(self, on_fault: Callable[[], None]) -> None:
        try:
            on_fault()
        finally:
            with self._handled_changed:
                self.handled += 1
                self._handled_changed.notify_all()

    def close(self) -> None:
        self.closed = True
        self.listener.close()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.down:
                client.close()
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        swallow: list[Callable[[], None]] = []  # set when this connection's next reply goes

        def replies() -> None:
            try:
                while data := upstream.recv(65536):
                    if swallow:
                        self._fault(swallow[0])
                        break
                    client.sendall(data)
            except OSError:
                pass
            _close(client, upstream)

        threading.Thread(target=replies, daemon=True).start()
        try:
            while data := client.recv(65536):
                with self.lock:
                    armed = self.armed
                    if armed is not None and armed[1](data):
                        self.armed = None
                        self.faults += 1
                    else:
                        armed = None
                if armed is not None and armed[0] == "request":
                    self._fault(armed[2])
                    break
                if armed is not None:
                    swallow.append(armed[2])
                upstream.sendall(data)
        except OSError:
            pass
        _close(client, upstream)


def _close(*sockets: socket.socket) -> None:
    for one in sockets:
        try:
            one.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        one.close()
