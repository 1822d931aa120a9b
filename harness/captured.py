"""What user code prints, caught for the run that ran it, even with runs in several threads.

    with printed_here() as printed:      # a tool's call, a tool module's import
        fn()
    printed.getvalue()                   # what this thread printed meanwhile

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


@contextmanager
def printed_here() -> Iterator[io.StringIO]:
    global _depth, _proxy
    buffer = io.StringIO()
    with _lock:
        if _depth == 0:
            _proxy = _PerThread(sys.stdout)
            sys.stdout = _proxy
        _depth += 1
        proxy = _proxy
    assert proxy is not None
    outer = getattr(proxy.local, "buffer", None)  # a tool that imports a tool module: nested
    proxy.local.buffer = buffer
    try:
        yield buffer
    finally:
        proxy.local.buffer = outer
        with _lock:
            _depth -= 1
            if _depth == 0:
                sys.stdout, _proxy = proxy.real, None
