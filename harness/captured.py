"""What user code prints (on stdout or stderr), caught for the run that ran it, even with
runs in several threads.

    with printed_here() as printed:      # a tool module's import
        fn()
    printed.getvalue()                   # what this thread printed meanwhile
    token = start() ... printed = stop(token)   # the same without a generator (each tool call)

sys.stdout is one object for the whole process. Swapping it for a buffer around a tool's
call is right for one run; with a batch's runs in threads (harness.batch) two swaps
interleave, a tool's print lands in another run's observation, and sys.stdout can be
left pointing at a dead buffer (the summary is then lost). So while any thread captures,
sys.stdout and sys.stderr are proxies that write to the buffer of the thread that prints,
if it has one, and to the real stream otherwise; the last capture to end puts the real
ones back. What a tool writes to stderr is its output too: it goes into the observation
(where views show it, never obey it), not raw onto the user's terminal.

A thread the tool started itself (a pool of its own) is that call's: a thread alive now
that was not when the call began. What it prints while the call runs goes into the call's
buffer; once the call has returned, it is dropped (never into a later call's observation,
never raw onto harness's output: the proxies stay while such a thread lives). While
several calls capture at once (a batch), a new thread could be any of theirs: it is
dropped. Every other thread writes through: harness's own (the main one, a batch's
workers, any that ran a tool) and the host program's, whose output is not harness's to take.
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
_began: dict[int, list[threading.Thread]] = {}  # thread ident -> the threads alive when its capture began
_runs: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # threads that ran a tool, or a batch's workers (the thread, not its ident: idents are reused)
_owner: weakref.WeakKeyDictionary[threading.Thread, io.StringIO | None] = weakref.WeakKeyDictionary()  # a tool's own thread -> its call's buffer (None: whose cannot be told)
_proxies: tuple[_PerThread, _PerThread] | None = None  # for (stdout, stderr)


class _Dropped:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


_DROPPED = _Dropped()


class _PerThread:
    def __init__(self, real: Any) -> None:
        self.real = real

    def _target(self) -> Any:
        if (mine := _buffers.get(threading.get_ident())) is not None:
            return mine
        thread = threading.current_thread()
        if thread in _runs or thread is threading.main_thread():
            return self.real
        if (owner := _owner.get(thread, False)) is False and (owner := _started_by(thread)) is False:
            return self.real  # the host program's own thread
        return owner if owner is not None and any(b is owner for b in list(_buffers.values())) else _DROPPED

    def write(self, text: str) -> int:
        return self._target().write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, ...
        return getattr(self._target(), name)


def _started_by(thread: threading.Thread) -> io.StringIO | None | bool:
    """The buffer of the call that started `thread`, kept as its owner from now on (None: one
    of several calls in progress could have; False: none did, it is the host program's)."""
    with _lock:
        calls = [_buffers[ident] for ident, alive in _began.items() if thread not in alive]
        if not calls:
            return False
        owner = _owner[thread] = calls[0] if len(calls) == 1 else None
    return owner


def still_running() -> list[threading.Thread]:
    """The threads tools started that are alive and would keep the process from ending."""
    with _lock:
        return [t for t in list(_owner) if t.is_alive() and not t.daemon]


def ours(thread: threading.Thread | None = None) -> None:
    """Mark a thread of harness's own (a batch's worker): it writes through, always."""
    _runs.add(thread or threading.current_thread())


def start() -> tuple:
    """Begin catching this thread's prints; what it returns is for `stop`."""
    global _depth, _proxies
    me, thread = threading.get_ident(), threading.current_thread()
    with _lock:
        if _depth == 0 and not (_proxies is not None and sys.stdout is _proxies[0] and sys.stderr is _proxies[1]):
            if _proxies is None or _proxies[0].real is not sys.stdout or _proxies[1].real is not sys.stderr:  # made once per real stream
                _proxies = (_PerThread(sys.stdout), _PerThread(sys.stderr))
            sys.stdout, sys.stderr = _proxies
        _depth += 1
        _runs.add(thread)
        outer = _buffers.get(me), _began.get(me)  # a tool that imports a tool module: nested
        _began[me] = threading.enumerate()  # a thread not among these, printing, is one this call started
        _buffers[me] = io.StringIO()  # made now: a tool's thread that prints never makes one, so none outlives its call
    return outer


def stop(outer: tuple) -> str:
    """Stop catching this thread's prints (`outer`: what `start` returned): what it printed."""
    global _depth
    me = threading.get_ident()
    with _lock:
        printed, began = _buffers.pop(me), _began.pop(me)
        for thread in threading.enumerate():  # the threads it started that never printed are its too
            if thread not in began and thread not in _runs and thread not in _owner:
                # (unless a call still running began before it too: then whose it is cannot be told)
                _owner[thread] = None if any(thread not in alive for alive in _began.values()) else printed
        if outer[0] is not None:
            _buffers[me], _began[me] = outer
        _depth -= 1
        if _depth == 0 and _proxies is not None and not any(t.is_alive() for t in list(_owner)):
            if sys.stdout is _proxies[0] and sys.stderr is _proxies[1]:  # (not a stream somebody set since)
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
