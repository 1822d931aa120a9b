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
(where views show it, never obey it), not raw onto the user's terminal.

A thread the tool started itself (a pool of its own) captures nothing, yet what it prints
is the tool's too: while one call captures, it goes into that call's buffer; while several
do (a batch), whose it is cannot be told, and it is dropped. Never raw onto harness's own
output. Harness's threads (the main one, a batch's, any that ran a tool) write through:
a batch's notes and progress, printed from its threads while another run's tool prints.
"""

from __future__ import annotations

import io
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_depth = 0  # captures in progress, in all threads
_buffers: dict[int, io.StringIO] = {}  # thread ident -> its capture's buffer, while it captures
_runs: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # threads that ran a tool: harness's, or the caller's own (the thread, not its ident: idents are reused)
_proxies: tuple[_PerThread, _PerThread] | None = None  # for (stdout, stderr)


class _Dropped:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


class _PerThread:
    def __init__(self, real: Any) -> None:
        self.real = real

    def _target(self) -> Any:
        me = threading.get_ident()
        if me not in _buffers and not _harnesss(thread := threading.current_thread()) and thread not in _runs:
            capturing = list(_buffers)  # a tool's own thread: the output is that tool's
            if len(capturing) != 1:
                return _Dropped() if capturing else self.real
            me = capturing[0]
        return _buffers.get(me) or self.real

    def write(self, text: str) -> int:
        return self._target().write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, ...
        return getattr(self._target(), name)


def _harnesss(thread: threading.Thread) -> bool:
    """The main thread, or one of a batch's (harness.batch names them harness-run_N)."""
    return thread is threading.main_thread() or thread.name.startswith("harness-")


def start() -> io.StringIO | None:
    """Begin catching this thread's prints; what it returns is for `stop`."""
    global _depth, _proxies
    me = threading.get_ident()
    with _lock:
        if _depth == 0:
            if _proxies is None or _proxies[0].real is not sys.stdout or _proxies[1].real is not sys.stderr:  # made once per real stream
                _proxies = (_PerThread(sys.stdout), _PerThread(sys.stderr))
            sys.stdout, sys.stderr = _proxies
        _depth += 1
        _runs.add(threading.current_thread())
    outer = _buffers.get(me)  # a tool that imports a tool module: nested
    _buffers[me] = io.StringIO()  # made now: a tool's thread that prints never makes one, so none outlives its call
    return outer


def stop(outer: io.StringIO | None) -> str:
    """Stop catching this thread's prints (`outer`: what `start` returned): what it printed."""
    global _depth
    me = threading.get_ident()
    printed = _buffers.pop(me)
    if outer is not None:
        _buffers[me] = outer
    with _lock:
        _depth -= 1
        if _depth == 0 and _proxies is not None:
            sys.stdout, sys.stderr = _proxies[0].real, _proxies[1].real
    return printed.getvalue()


@contextmanager
def printed_here() -> Iterator[io.StringIO]:
    outer = start()
    buffer = _buffers[threading.get_ident()]
    try:
        yield buffer
    finally:
        stop(outer)
