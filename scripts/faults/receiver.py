"""The loopback webhook receiver (a threaded http.server in this process)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """A loopback webhook endpoint recording each delivery by its webhook-id. It can wait
    `delay` seconds before each answer, and hold the next request whose body holds a marker
    without answering it (`hold_next`): a held request is not counted as received."""

    def __init__(self, port: int = 0) -> None:
        self.lock = threading.Lock()
        self.received: dict[str, tuple[float, dict]] = {}
        self.delay = 0.0
        self.hold: bytes | None = None
        self.held_id: str | None = None
        self.held = threading.Event()
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                message_id = self.headers.get("webhook-id", "")
                with receiver.lock:
                    hold = receiver.hold is not None and receiver.hold in body
                    if hold:
                        receiver.hold = None
                if hold:
                    receiver.held_id = message_id
                    receiver.held.set()
                    receiver.release.wait(30)
                    self.close_connection = True
                    return  # no answer: its sender has been killed meanwhile
                if receiver.delay:
                    time.sleep(receiver.delay)
                try:
                    payload = json.loads(body)
                except ValueError:
                    payload = {}
                with receiver.lock:
                    receiver.received.setdefault(message_id, (time.monotonic(), payload))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def hold_next(self, marker: str) -> None:
        self.held.clear()
        self.release.clear()
        self.held_id = None
        with self.lock:
            self.hold = marker.encode()

    def key_names(self, prefix: str) -> set[str]:
        """The names of the keys whose key.created events arrived, among those with `prefix`."""
        with self.lock:
            payloads = [payload for _, payload in self.received.values()]
        names = set()
        for payload in payloads:
            name = ((payload.get("data") or {}).get("key") or {}).get("name") or ""
            if payload.get("type") == "key.created" and name.startswith(prefix):
                names.add(name)
        return names

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
