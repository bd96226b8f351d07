"""A webhook receiver on loopback, as a customer would run one: it verifies every delivery with
the `standardwebhooks` library (not our signer) and records it."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def payload(self) -> dict:
        return json.loads(self.body)

    @property
    def message_id(self) -> str:
        return self.headers["webhook-id"]


@dataclass
class Receiver:
    url: str
    received: list[Received] = field(default_factory=list)
    answers: list[int] = field(default_factory=list)  # status codes to answer, then 200s
    lock: threading.Lock = field(default_factory=threading.Lock)

    def verified(self, secret: str) -> list[dict]:
        """Every delivery's payload, each verified under `secret` (raises if one fails)."""
        hook = Webhook(secret)
        return [hook.verify(r.body, r.headers) for r in self.received]

    def types(self) -> list[str]:
        return [r.payload["type"] for r in self.received]


@contextmanager
def receiver(answers: list[int] | None = None) -> Iterator[Receiver]:
    """A receiver serving on a free loopback port until the block ends."""
    box: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True  # headers and body leave at once, as real servers do

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = self.rfile.read(length)
            catcher = box[0]
            with catcher.lock:
                catcher.received.append(
                    Received({k.lower(): v for k, v in self.headers.items()}, body)
                )
                status = catcher.answers.pop(0) if catcher.answers else 200
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", "http://127.0.0.1:9/elsewhere")
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(f"answered {status}".encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    box.append(
        Receiver(f"http://127.0.0.1:{server.server_port}/hooks", answers=list(answers or []))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield box[0]
    finally:
        server.shutdown()
        server.server_close()
