"""What user code prints (on stdout or stderr), caught for the run that ran it, even with
runs in several threads.

    with printed_here() as printed:      # a tool module's import
        fn()
    printed.getvalue()                   # what this thread printed meanwhile
    outer = start() ... printed = stop(outer)   # the same without a generator (each tool call)

sys.stdout is one object for the whole process. Swapping it for a buffer around a tool's
call is right for one run; with a batch's runs in threads (harness.batch) two swaps
interleave, a tool's print lands in another run's observation, and sys.stdout can be
left pointing at a dead buffer (the summary is then lost). So while any thread captures,
sys.stdout and sys.stderr are proxies that write to the buffer of the thread that prints,
if it has one, and to the real stream otherwise; the last capture to end puts the real
ones back. What a tool writes to stderr is its output too: it goes into the observation
(where views show it, never obey it), not raw onto the user's terminal. Most tools print
nothing, so a tool call's buffer is made only when it first writes (_PENDING until then).
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_depth = 0  # captures in progress, in all threads
_local = threading.local()  # .buffer: the capturing thread's own
_proxies: tuple[_PerThread, _PerThread] | None = None  # for (stdout, stderr)
_PENDING = "pending"  # the thread captures, and has printed nothing yet


class _PerThread:
    def __init__(self, real: Any) -> None:
        self.real = real

    def _target(self) -> Any:
        buffer = getattr(_local, "buffer", None)
        if buffer is _PENDING:
            buffer = _local.buffer = io.StringIO()
        return buffer or self.real

    def write(self, text: str) -> int:
        return self._target().write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, ...
        return getattr(self._target(), name)


def start() -> io.StringIO | str | None:
    """Begin catching this thread's prints; what it returns is for `stop`."""
    global _depth, _proxies
    with _lock:
        if _depth == 0:
            if _proxies is None or _proxies[0].real is not sys.stdout or _proxies[1].real is not sys.stderr:  # made once per real stream
                _proxies = (_PerThread(sys.stdout), _PerThread(sys.stderr))
            sys.stdout, sys.stderr = _proxies
        _depth += 1
    outer = getattr(_local, "buffer", None)  # a tool that imports a tool module: nested
    _local.buffer = _PENDING
    return outer


def stop(outer: io.StringIO | str | None) -> str:
    """Stop catching this thread's prints (`outer`: what `start` returned): what it printed."""
    global _depth
    printed, _local.buffer = _local.buffer, outer
    with _lock:
        _depth -= 1
        if _depth == 0 and _proxies is not None:
            sys.stdout, sys.stderr = _proxies[0].real, _proxies[1].real
    return "" if printed is _PENDING else printed.getvalue()


@contextmanager
def printed_here() -> Iterator[io.StringIO]:
    outer = start()
    _local.buffer = buffer = io.StringIO()
    try:
        yield buffer
    finally:
        stop(outer)
