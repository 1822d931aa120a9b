"""A misbehaving OpenAI-compatible server on loopback, for the tests of the live path.

A real HTTP server on 127.0.0.1 (a free port) that answers each POST with a Reply written
down in the test, so every failure a user can meet is produced over a real socket:

    Reply(chunks=sse(text("Hi"), text("", "stop"), "[DONE]"))     a good stream
    Reply(repeat=b"data: ...\\n\\n")                              a stream that never ends
    Reply(chunks=[...], drip=1.0)                                one byte a second
    Reply(headers={"Content-Encoding": "gzip"})                  a header that lies
    Reply(401, [b'{"error": "bad key $AUTH"}'])                  `$AUTH` echoes the key sent

`serve(a, b, ...)` queues one reply per request (then empty streams); every request is kept
(`requests`: headers and JSON body; `paths`; `peers`, the client's address, which a
kept-alive connection keeps). A busy server: `delay` seconds before each
answer, `answer(body) -> Reply` to answer what was asked, and `in_flight` /
`most_in_flight` count the requests being answered at once. POSTs to `/extras/...` (llama-cpp-python's
token count) get `extras_reply`, by default 404. GET answers 200 with a model list, as
`/v1/models` does, so a client waiting for the server sees it ready. No model weights.
"""

from __future__ import annotations

import json
import ssl
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def sse(*events: object) -> list[bytes]:
    """Each event as one `data:` line; strings are sent as they are."""
    return [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events]


def text(t: str, finish: str | None = None) -> dict:
    """A completions event carrying `t`."""
    return {"choices": [{"index": 0, "text": t, "finish_reason": finish}]}


def delta(t: str, finish: str | None = None) -> dict:
    """A chat completions event carrying `t`."""
    return {"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": finish}]}


USAGE = {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 8}}}
GOOD = sse(text("Thought: "), text("add."), text("", "stop"), USAGE, "[DONE]")


@dataclass
class Reply:
    status: int = 200
    chunks: list[bytes] = field(default_factory=lambda: list(GOOD))
    pause: float = 0.0  # seconds before each chunk
    cut_off: bool = False  # close the socket mid-stream, without ending the chunked body
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)  # more headers (`$AUTH` is the key sent)
    repeat: bytes = b""  # after the chunks, send this again and again until the client leaves
    drip: float = 0.0  # seconds between single bytes of the chunks
    stall: float = 0.0  # seconds to wait after the chunks (before `repeat` or the end)
    header_drip: float = 0.0  # seconds between single bytes of the status line and headers


class FakeServer:
    """Answers every POST with the next queued reply, or `self.reply`; remembers each
    request and whether the client left."""

    def __init__(self, port: int = 0, tls: tuple[str, str] | None = None) -> None:
        self.reply = Reply()
        self.queue: list[Reply] | None = None
        self.requests: list[tuple[dict, dict]] = []  # (headers, JSON body)
        self.paths: list[str] = []
        self.peers: list[tuple[str, int]] = []  # the client's address of each POST: one per connection used
        self.extras: list[dict] = []  # bodies POSTed to /extras/... (llama-cpp-python's token counts)
        self.extras_reply: tuple[int, object] | Reply = (404, {"detail": "Not Found"})  # or a Reply, streamed
        self.get_reply: Reply | None = None  # GET's answer, if not the model list
        self.client_left = threading.Event()
        self.delay = 0.0  # seconds before each POST is answered (a busy server)
        self.answer = None  # or a function of the JSON body giving the Reply (a server that reads its prompt)
        self.in_flight = self.most_in_flight = 0  # POSTs being answered now; the most at once
        self.count_lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # each write leaves at once, as a real server's do (no 40 ms ACK waits)

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if fake.get_reply is not None:
                    return self._answer({}, fake.get_reply)
                self._json(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})

            def _json(self, status: int, data: object) -> None:
                body = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if "/extras/" in self.path:  # llama-cpp-python's own endpoints: not this server's
                    fake.extras.append(body)
                    if isinstance(fake.extras_reply, Reply):
                        return self._answer(body, fake.extras_reply)
                    return self._json(*fake.extras_reply)
                with fake.count_lock:
                    fake.requests.append((dict(self.headers), body))
                    fake.paths.append(self.path)
                    fake.peers.append(self.client_address)
                    fake.in_flight += 1
                    fake.most_in_flight = max(fake.most_in_flight, fake.in_flight)
                try:
                    time.sleep(fake.delay)
                    self._answer(body, fake.answer(body) if fake.answer else fake.next_reply())
                finally:
                    with fake.count_lock:
                        fake.in_flight -= 1

            def _answer(self, body: dict, reply: Reply) -> None:
                auth = (self.headers.get("Authorization") or "").encode()

                def echo(data: bytes) -> bytes:
                    return data.replace(b"$AUTH", auth)

                self.send_response(reply.status)
                self.send_header("Content-Type", echo(reply.content_type.encode()).decode("latin-1"))
                for name, value in reply.headers.items():
                    self.send_header(name, echo(value.encode()).decode("latin-1"))
                self.send_header("Transfer-Encoding", "chunked")
                try:
                    if reply.header_drip:  # the status line and headers a byte at a time
                        head, self._headers_buffer = b"".join([*self._headers_buffer, b"\r\n"]), []
                        for piece in _pieces(head, reply.header_drip):
                            self.wfile.write(piece)
                            self.wfile.flush()
                    else:
                        self.end_headers()
                    for chunk in reply.chunks:
                        time.sleep(reply.pause)
                        for piece in _pieces(echo(chunk), reply.drip):
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                            self.wfile.flush()
                    time.sleep(reply.stall)
                    while reply.repeat and not fake.closing:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(reply.repeat), reply.repeat))
                    if reply.cut_off:
                        self.close_connection = True
                        return
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError, ssl.SSLEOFError):
                    fake.client_left.set()

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # a burst of clients (a batch, twenty agents) waits to be accepted

            def handle_error(self, request: object, client_address: object) -> None:
                # A client that left (over TLS: an EOF) is no error here; printed, it would land in
                # whatever test runs next on this worker, inside its captured stderr.
                if not isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLEOFError)):
                    super().handle_error(request, client_address)

        self.closing = False
        self.httpd = Server(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        if tls:  # (certificate file, key file): https://
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_port
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def serve(self, *replies: Reply) -> None:
        """One reply per request, in order; after them, empty streams."""
        self.queue = list(replies)

    def next_reply(self) -> Reply:
        if self.queue is None:
            return self.reply
        return self.queue.pop(0) if self.queue else Reply(chunks=[])

    def close(self) -> None:
        self.closing = True
        self.httpd.shutdown()
        self.httpd.server_close()


def _pieces(chunk: bytes, drip: float):
    if not drip:
        yield chunk
        return
    for i in range(len(chunk)):
        time.sleep(drip)
        yield chunk[i : i + 1]
