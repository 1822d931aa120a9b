"""A server's client: made in one place (`new_client`), where the environment httpx reads is
checked (a bad variable is one HarnessError naming it); every read and write within its
call's deadline, and every socket within reach of Ctrl-C.
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

from harness.backends.urls import check_proxy_url, hidden
from harness.errors import HarnessError

PROXIES = ("http_proxy", "https_proxy", "all_proxy")  # in either case, lower case first (as urllib reads them)
CERTIFICATES = (("SSL_CERT_FILE", "cafile"), ("SSL_CERT_DIR", "capath"))  # the first one set is used
DRAIN_SECONDS = 0.5  # read after [DONE] for the connection's sake, at most


def new_client(base_url: str, direct: bool = False, **options: Any) -> httpx.Client:
    """An httpx client for the server at `base_url` (`options`: httpx.Client's), under the calls'
    deadlines; `direct`: harness's own server on this machine, reached without a proxy."""
    for name, value in {} if direct else proxies().items():
        check_proxy_url(value, name)
    try:
        # Checked TLS for an https:// server or behind a proxy; a plain http:// server gets a
        # context with no certificates (loading them costs start-up), which would refuse any peer.
        checked = not direct and (proxied() or base_url.lower().startswith("https:"))
        verify = trusted() if checked else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        client = httpx.Client(verify=verify, trust_env=not direct, **options)
    except (ValueError, ImportError, httpx.InvalidURL) as e:  # what httpx still refuses of the environment: a NO_PROXY host
        names = [n for n in os.environ if n.lower() == "no_proxy"] or list(proxies()) or ["the *_proxy variables"]
        raise HarnessError(names[0], f"httpx cannot use it ({hidden(str(e))[:120]}); give hosts as example.com, 10.0.0.1 or ::1, comma-separated") from None
    return CALLS.install(client)


def proxies() -> dict[str, str]:
    """The proxies httpx goes by, by the name each was set under: {"HTTPS_PROXY": "http://proxy:3128"}."""
    from urllib.request import getproxies_environment  # (its rules: lower case first, HTTP_PROXY not in a CGI script)

    found, named = getproxies_environment(), {}
    for name in PROXIES:
        if value := found.get(name.removesuffix("_proxy")):
            named[name if name in os.environ else name.upper()] = value
    return named


def proxied(url: str | None = None) -> bool:
    """Is a proxy set, one that NO_PROXY does not skip for `url`'s host? httpx goes through it."""
    from urllib.parse import urlsplit
    from urllib.request import proxy_bypass_environment

    return bool(proxies()) and (url is None or not proxy_bypass_environment(urlsplit(url).hostname or ""))


def trusted() -> ssl.SSLContext:
    """The certificates httpx would trust (CERTIFICATES, else certifi's), a bad variable named."""
    from harness.escape import one_line

    for name, kind in CERTIFICATES:
        if not (value := os.environ.get(name)):
            continue
        shown = one_line(repr(value)[:200])
        if kind == "capath" and not os.path.isdir(value):
            raise HarnessError(name, f"{shown} is not a folder (of certificates to trust); unset it, or name one")
        try:
            return ssl.create_default_context(**{kind: value})
        except OSError as e:  # ssl.SSLError is one too: a file that holds no certificate
            why = e.strerror or getattr(e, "reason", None) or "not readable"
            raise HarnessError(name, f"{shown} cannot be read as certificates to trust ({one_line(str(why))[:80]}); name a PEM file of CA certificates") from None
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def drain(raw: Iterator[bytes]) -> None:
    """After [DONE], read the stream's end (4 KB, DRAIN_SECONDS at most) so that httpx keeps the
    connection for the next call; a server that sends more, or stalls, only loses it."""
    try:
        with CALLS.until(time.monotonic() + DRAIN_SECONDS):  # each read ends by then
            read_raw(raw, 4097)
    except httpx.HTTPError:  # the short deadline passed, or the server left
        pass


def tls_cause(error: BaseException) -> ssl.SSLError | None:
    """The TLS error behind a failed connection, if that is why it failed (a refused
    certificate: an ssl.SSLCertVerificationError)."""
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, ssl.SSLError):
        cause = cause.__cause__ or cause.__context__
    return cause


def read_bounded(client: Any, method: str, url: str, seconds: float, limit: int, **request: Any) -> tuple[int, bytes]:
    """A request that is not a model call (a token count, "are you up?"), bounded as a call is:
    its status and at most `limit` bytes of its body within `seconds`, or an httpx error."""
    with CALLS.until(time.monotonic() + seconds), client.stream(method, url, timeout=seconds, **request) as response:
        return response.status_code, read_raw(response.iter_raw(), limit)


def read_raw(raw: Iterator[bytes], limit: int) -> bytes:
    """At most `limit` bytes of an answer's body (`raw`: its response.iter_raw()), as they came."""
    body = bytearray()
    if limit > 0:
        for chunk in raw:
            body += chunk
            if len(body) >= limit:
                break
    return bytes(body[:limit])


class Deadlines(httpcore.NetworkBackend):
    """httpcore's sockets, each read and write of which ends by the deadline of its thread's call
    (a read timeout alone is per read, which a server dripping a byte a second meets)."""

    def __init__(self) -> None:
        self._sockets = httpcore.SyncBackend()
        self._call = threading.local()  # .deadline and .sockets: this thread's call's, if it is making one

    @contextmanager
    def until(self, deadline: float, sockets: weakref.WeakSet[socket.socket] | None = None) -> Iterator[None]:
        """Within this, this thread's reads and writes end by `deadline` (nested: the sooner),
        and the sockets it connects join `sockets` (which ServerModel.interrupt ends at once)."""
        outer = getattr(self._call, "deadline", None), getattr(self._call, "sockets", None)
        self._call.deadline = deadline if outer[0] is None else min(outer[0], deadline)
        self._call.sockets = sockets if sockets is not None else outer[1]
        try:
            yield
        finally:
            self._call.deadline, self._call.sockets = outer

    def left(self, timeout: float | None, late: type[Exception] = httpcore.ReadTimeout) -> float | None:
        """How long the next read or write may block; past the deadline it raises `late`."""
        deadline = getattr(self._call, "deadline", None)
        if deadline is None:
            return timeout
        if (left := deadline - time.monotonic()) <= 0:
            raise late("the call's time limit passed")
        return left if timeout is None else min(timeout, left)

    def install(self, client: httpx.Client) -> httpx.Client:
        """Under every pool of `client`: httpx takes no backend, so this sets its pools' own
        (tests/test_backends.py fails if httpcore renames it)."""
        for transport in [client._transport, *client._mounts.values()]:
            if (pool := getattr(transport, "_pool", None)) is not None:
                pool._network_backend = self
        return client

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None, socket_options: Any = None) -> httpcore.NetworkStream:
        stream = self._sockets.connect_tcp(host, port, self.left(timeout, httpcore.ConnectTimeout), local_address, socket_options)
        if (sockets := getattr(self._call, "sockets", None)) is not None:
            sockets.add(stream.get_extra_info("socket"))
        return _Bounded(stream, self)


class _Bounded(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream, deadlines: Deadlines) -> None:
        self._stream, self._deadlines = stream, deadlines

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, self._deadlines.left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, self._deadlines.left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None) -> httpcore.NetworkStream:
        return _Bounded(self._stream.start_tls(ssl_context, server_hostname, self._deadlines.left(timeout, httpcore.ConnectTimeout)), self._deadlines)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


CALLS = Deadlines()  # one for every client: a deadline is the calling thread's
