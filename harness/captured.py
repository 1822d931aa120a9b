"""What user code prints (on stdout or stderr), caught for the run that ran it, even with
runs in several threads.

    with printed_here() as printed:      # a tool module's import
        fn()
    printed.getvalue()                   # what this thread printed meanwhile
    printed, outer = start() ... stop(outer)   # the same without a generator (each tool call)

sys.stdout is one object for the whole process. Swapping it for a buffer around a tool's
call is right for one run; with a batch's runs in threads (harness.batch) two swaps
interleave, a tool's print lands in another run's observation, and sys.stdout can be
left pointing at a dead buffer (the summary is then lost). So while any thread captures,
sys.stdout and sys.stderr are proxies that write to the buffer of the thread that prints,
if it has one, and to the real stream otherwise; the last capture to end puts the real
ones back. What a tool writes to stderr is its output too: it goes into the observation
(where views show it, never obey it), not raw onto the user's terminal.
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


class _PerThread:
    def __init__(self, real: Any) -> None:
        self.real = real

    def _target(self) -> Any:
        return getattr(_local, "buffer", None) or self.real

    def write(self, text: str) -> int:
        return self._target().write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, ...
        return getattr(self._target(), name)


def start() -> tuple[io.StringIO, io.StringIO | None]:
    """Begin catching this thread's prints: (its buffer, the one it replaces, for `stop`)."""
    global _depth, _proxies
    with _lock:
        if _depth == 0:
            if _proxies is None or (_proxies[0].real, _proxies[1].real) != (sys.stdout, sys.stderr):  # made once per real stream
                _proxies = (_PerThread(sys.stdout), _PerThread(sys.stderr))
            sys.stdout, sys.stderr = _proxies
        _depth += 1
    outer = getattr(_local, "buffer", None)  # a tool that imports a tool module: nested
    _local.buffer = buffer = io.StringIO()
    return buffer, outer


def stop(outer: io.StringIO | None) -> None:
    global _depth
    _local.buffer = outer
    with _lock:
        _depth -= 1
        if _depth == 0 and _proxies is not None:
            sys.stdout, sys.stderr = _proxies[0].real, _proxies[1].real


@contextmanager
def printed_here() -> Iterator[io.StringIO]:
    buffer, outer = start()
    try:
        yield buffer
    finally:
        stop(outer)
