"""How a server's client holds its connections: TLS only where it is needed, a stream read
to its end so that its connection is kept, and every socket within reach of Ctrl-C.
"""

from __future__ import annotations

import os
import socket
import ssl
import weakref
from collections.abc import Iterator
from typing import Any

import httpx

from harness.backends import wire
from harness.backends.bounds import Watchdog
from harness.backends.urls import hidden

DRAIN_SECONDS = 0.5  # read after [DONE] for the connection's sake, at most
PROXIES = ("http_proxy", "https_proxy", "all_proxy")


def drain(response: httpx.Response, raw: Iterator[bytes]) -> None:
    """After [DONE] the answer is whole: read the stream's end (at most 4 KB, for at most
    half a second), so that httpx keeps the connection for the next call. A server that
    sends more, or stalls, only loses its connection; the answer stands."""
    dog = Watchdog(DRAIN_SECONDS)
    dog.watch(response)
    try:
        wire.drain(raw, 4096)
    except httpx.HTTPError:  # the short deadline shut the socket down, or the server left
        pass
    finally:
        dog.cancel()


def certificate_refused(error: BaseException) -> str:
    """Why TLS refused the server's certificate, if that is why the connection failed."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return hidden(str(cause.verify_message or cause.reason or "not verified"))[:200]
        cause = cause.__cause__ or cause.__context__
    return ""


PROXIES = ("http_proxy", "https_proxy", "all_proxy")


def tls(base_url: str) -> ssl.SSLContext | bool:
    """httpx's checked TLS (certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR) for an https://
    server, or behind a proxy (which may be https://). A plain http:// server (one on this
    machine) never needs TLS, and loading the bundle costs ~50 ms of every start: its client
    gets a context with no certificates, which would refuse any peer."""
    proxied = any(os.environ.get(name) or os.environ.get(name.upper()) for name in PROXIES)
    return True if proxied or base_url.lower().startswith("https:") else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class Sockets:
    """Every connection's socket of one client, kept weakly as httpcore's trace reports each
    new one, so that all its calls, even one still waiting for its first byte (before any
    response says which socket it is on), can be ended at once."""

    def __init__(self) -> None:
        self._all: weakref.WeakSet[socket.socket] = weakref.WeakSet()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event == "connection.connect_tcp.complete" and (stream := info.get("return_value")) is not None:
            if (sock := stream.get_extra_info("socket")) is not None:
                self._all.add(sock)

    def shut_all(self) -> None:
        for sock in list(self._all):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed already
                pass
