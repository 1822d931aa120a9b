"""Containment: what a Python tool (the user's code, in harness's process) does to the
output stays with its call.

1. harness's own output leaves the command through a channel no tool is handed (private
   copies of fds 1 and 2); a reader that has gone (`| head -1`) cuts only what is printed.
2. What a tool call prints on sys.stdout or sys.stderr joins its observation; what other
   threads print, or what reaches fd 1 itself (a subprocess), goes to /dev/null.
3. Whatever a tool raises (but a Ctrl-C) or returns becomes its observation; what it leaves
   behind (the streams rebound or closed, the Ctrl-C handler changed) is put back as its
   call ends, and the command ends with os._exit once its output is flushed.

Not contained: a tool that ends the process or writes to harness's fds by number, nor its
threads once its call has returned. In a program that calls harness there is no channel:
the proxies are on sys.stdout and sys.stderr only while calls run.
"""

from __future__ import annotations

import io
import os
import signal
import sys
import threading
from _signal import getsignal  # signal.getsignal without its enum wrapping (twice a tool call)
from typing import Any, TextIO

_here = threading.local()  # .printed: this thread's call's buffer while it calls a tool; .ours: a thread of harness's
_lock = threading.Lock()
_calls = 0  # calls capturing now, in all threads (in a program: the proxies go when none is left)
_proxies: tuple[_Proxy, _Proxy] | None = None  # (sys.stdout, sys.stderr) while they are harness's
_channel: tuple[TextIO, TextIO] | None = None  # the command's own (stdout, stderr), once contain() has run


class _Proxy:
    """sys.stdout (or sys.stderr) for every thread: a thread calling a tool writes to its
    call's buffer, one of harness's to `own`, any other to `other`. No tool can close it."""

    def __init__(self, own: Any, other: Any) -> None:
        self.own, self.other = own, other

    def _target(self) -> Any:
        printed = getattr(_here, "printed", None)
        if printed is not None:
            return printed
        return self.own if getattr(_here, "ours", False) else self.other

    def write(self, text: str) -> int:
        return self._target().write(text)

    def close(self) -> None:  # harness's streams are not a tool's to close
        pass

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...
        return getattr(self._target(), name)


class _Channel(io.FileIO):
    """A private copy of fd 1 or 2. When its reader has gone (a closed pipe), the rest goes
    to /dev/null: what is printed is cut, the command goes on to its reports and exit code."""

    def write(self, data: Any) -> int:
        try:
            return super().write(data)
        except BrokenPipeError:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.fileno())
            os.close(null)
            return memoryview(data).nbytes


def _copy(stream: Any) -> TextIO:
    """harness's own copy of `stream` (sys.stdout or sys.stderr as the command starts),
    buffered as it was: `python -u` and PYTHONUNBUFFERED leave its bytes unbuffered."""
    try:
        stream.flush()
        raw = _Channel(os.dup(stream.fileno()), "w")
    except (OSError, ValueError, AttributeError):  # no file under it (a test's StringIO): it is harness's own
        return stream
    binary = raw if isinstance(getattr(stream, "buffer", None), io.RawIOBase) else io.BufferedWriter(raw)
    line_buffering, write_through = getattr(stream, "line_buffering", False), getattr(stream, "write_through", False)
    return io.TextIOWrapper(binary, stream.encoding, stream.errors, line_buffering=line_buffering, write_through=write_through)


def contain() -> None:
    """The command: harness's output goes through its channel from here on, sys.stdout and
    sys.stderr are proxies for good, and fd 1 points at /dev/null. The calling thread is harness's."""
    global _channel, _proxies
    out, err = _copy(sys.stdout), _copy(sys.stderr)
    nowhere = open(os.devnull, "w", encoding="utf-8", errors="replace")  # where threads not harness's write
    if out is not sys.stdout and sys.stdout.fileno() == 1:
        os.dup2(nowhere.fileno(), 1)
    with _lock:
        _channel, _proxies = (out, err), (_Proxy(out, nowhere), _Proxy(err, nowhere))
        sys.stdout, sys.stderr = _proxies
    ours()


def flush() -> None:
    """Flush the command's channel (before os._exit); a reader gone or a stream closed: nothing more to say."""
    for stream in _channel or (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def ours() -> None:
    """Mark the calling thread as harness's own (the command's, a batch's workers)."""
    _here.ours = True


def start() -> tuple:
    """Begin catching this thread's prints for a tool call; what it returns is for `stop`."""
    global _calls, _proxies
    main = threading.current_thread() is threading.main_thread()
    with _lock:
        if _proxies is None:  # a program calling harness: proxies while calls run
            _proxies = (_Proxy(sys.stdout, sys.stdout), _Proxy(sys.stderr, sys.stderr))
        sys.stdout, sys.stderr = _proxies
        _calls += 1
    outer = getattr(_here, "printed", None)  # a tool that imports a tool module: nested
    _here.printed = io.StringIO()
    return outer, getsignal(signal.SIGINT) if main else None


def stop(call: tuple) -> str:
    """Stop catching (`call`: what `start` returned): what this thread printed meanwhile.
    What the tool left behind is put back: the streams, and (in the main thread) Ctrl-C."""
    global _calls, _proxies
    outer, handler = call
    printed, _here.printed = _here.printed.getvalue(), outer
    with _lock:
        _calls -= 1
        assert _proxies is not None
        if _calls or _channel is not None:
            sys.stdout, sys.stderr = _proxies
        else:  # a program's last call ended: its streams as they were
            sys.stdout, sys.stderr = _proxies[0].other, _proxies[1].other
            _proxies = None
    if handler is not None and getsignal(signal.SIGINT) is not handler:
        signal.signal(signal.SIGINT, handler)
    return printed

