"""What user code prints, caught for the run that ran it, even with runs in several threads.

    with printed_here() as printed:      # a tool module's import
        fn()
    printed.getvalue()                   # what this thread printed meanwhile
    printed, outer = start() ... stop(outer)   # the same without a generator (each tool call)

sys.stdout is one object for the whole process. Swapping it for a buffer around a tool's
call is right for one run; with a batch's runs in threads (harness.batch) two swaps
interleave, a tool's print lands in another run's observation, and sys.stdout can be
left pointing at a dead buffer (the summary is then lost). So while any thread captures,
sys.stdout is one proxy that writes to the buffer of the thread that prints, if it has
one, and to the real stream otherwise; the last capture to end puts the real one back.
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
_proxy: _PerThread | None = None


class _PerThread:
    def __init__(self, real: Any) -> None:
        self.real = real
        self.local = threading.local()

    def _target(self) -> Any:
        return getattr(self.local, "buffer", None) or self.real

    def write(self, text: str) -> int:
        return self._target().write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, ...
        return getattr(self._target(), name)


def start() -> tuple[io.StringIO, io.StringIO | None]:
    """Begin catching this thread's prints: (its buffer, the one it replaces, for `stop`)."""
    global _depth, _proxy
    with _lock:
        if _depth == 0:
            if _proxy is None or _proxy.real is not sys.stdout:  # made once per real stream: cheap after
                _proxy = _PerThread(sys.stdout)
            sys.stdout = _proxy
        _depth += 1
    local = _proxy.local
    outer = getattr(local, "buffer", None)  # a tool that imports a tool module: nested
    local.buffer = buffer = io.StringIO()
    return buffer, outer


def stop(outer: io.StringIO | None) -> None:
    global _depth
    _proxy.local.buffer = outer
    with _lock:
        _depth -= 1
        if _depth == 0:
            sys.stdout = _proxy.real


@contextmanager
def printed_here() -> Iterator[io.StringIO]:
    buffer, outer = start()
    try:
        yield buffer
    finally:
        stop(outer)
