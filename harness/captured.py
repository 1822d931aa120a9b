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
if it has one, and to the real stream otherwise. What a tool writes to stderr is its
output too: it goes into the observation (where views show it, never obey it), not raw
onto the user's terminal.

A thread the tool started itself is that call's: a thread that is alive now and was not
when the call began. What it prints while the call runs goes into the call's buffer; while
several calls capture at once (a batch), a new thread could be any of theirs, and it is
dropped. A pool's job (concurrent.futures) is the call's that submitted it, whichever
worker runs it: submit is wrapped to say so, once the module is loaded. Other pools are
not followed: a worker they keep is the call's that started it.

Two ways to tell. In the `harness` command (`contain()`, from harness.__main__) every thread
but harness's own is a tool's, and whose is decided as it starts: the call that was
capturing in the thread that started it, or, for a thread started by a tool's thread, that
thread's call. Once that call has returned, what it prints is dropped for the rest of the
process (the proxies stay). In a program that calls harness, its own threads are not
harness's to silence and no start is watched: a thread is taken for a call's if it prints
while that call runs and was not alive when it began, and the proxies go when the last
capture ends.
"""

from __future__ import annotations

import functools
import io
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.RLock()  # (re-entrant: a print from code that runs while it is held cannot hang)
_depth = 0  # captures in progress, in all threads
_contained = False  # the harness command: every thread but harness's own is a tool's
_buffers: dict[int, io.StringIO] = {}  # thread ident -> its capture's buffer, while it captures
_began: dict[int, list[threading.Thread] | None] = {}  # ident -> the threads alive when its capture began (None: it alone)
# Threads by ident, with the thread kept to tell a reused ident from its first owner:
_harnesss: dict[int, threading.Thread] = {}  # threads that ran a tool, and a batch's workers
_owner: dict[int, tuple[threading.Thread, io.StringIO | None]] = {}  # a tool's thread -> its call's buffer (None: cannot be told)
_born: weakref.WeakKeyDictionary[threading.Thread, io.StringIO | None] = weakref.WeakKeyDictionary()  # the command: whose each new thread is
_working: dict[int, io.StringIO] = {}  # a pool's worker -> the buffer of the call whose job it runs
_jobs_owned = False  # ThreadPoolExecutor.submit is wrapped (`_own_jobs`)
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
        me = threading.get_ident()
        if (mine := _buffers.get(me)) is not None:
            return mine
        thread = threading.current_thread()
        if _harnesss.get(me) is thread or thread is threading.main_thread():
            return self.real
        return _whose(me, thread, self.real)

    def write(self, text: str) -> int:
        return self._target().write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, ...
        return getattr(self._target(), name)


def _whose(me: int, thread: threading.Thread, real: Any) -> Any:
    """Where a thread that is neither capturing nor harness's writes."""
    with _lock:
        if (job := _working.get(me)) is not None:
            return _live(job)  # a pool's worker, running a call's job
        if _contained:  # whose it is was told as it started (`contain`)
            return _live(_born.get(thread))
        known = _owner.get(me)
        if known is None or known[0] is not thread:  # not known yet: did a call in progress start it?
            calls = [_buffers[ident] for ident, alive in _began.items() if alive is not None and thread not in alive or alive is None and ident != me]
            if not calls:
                return real  # the program's own thread
            known = _owner[me] = (thread, calls[0] if len(calls) == 1 else None)
        return _live(known[1])


def _live(buffer: io.StringIO | None) -> Any:
    """A call's buffer while it captures; once it has returned (or whose cannot be told), nowhere."""
    return buffer if buffer is not None and any(b is buffer for b in _buffers.values()) else _DROPPED


def _own_jobs() -> None:
    """A pool's job is the call's that submits it (or whose thread submits it), not the call's
    that happens to capture while a worker runs it: ThreadPoolExecutor.submit says whose."""
    global _jobs_owned
    _jobs_owned, pool = True, sys.modules["concurrent.futures.thread"].ThreadPoolExecutor
    submit = pool.submit

    @functools.wraps(submit)
    def owned(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        me = threading.get_ident()  # the call capturing here, the job running here, or this thread's call
        owner = _buffers.get(me) or _working.get(me) or _born.get(threading.current_thread())
        if owner is None:  # not a tool's (harness's own batch, a program's pool): as it was
            return submit(self, fn, *args, **kwargs)

        def job(*a: Any, **k: Any) -> Any:
            worker = threading.get_ident()
            _working[worker] = owner
            try:
                return fn(*a, **k)
            finally:
                _working.pop(worker, None)

        return submit(self, job, *args, **kwargs)

    pool.submit = owned


def contain() -> None:
    """The harness command: no thread is another program's. Each thread is told, as it starts,
    whose it is: the call capturing in the thread that starts it, or that thread's own call."""
    global _contained
    if _contained:
        return
    _contained, started = True, threading.Thread.start

    def start(thread: threading.Thread) -> None:
        parent = threading.current_thread()
        me = threading.get_ident()  # the call capturing here, the pool job running here, or this thread's call
        with _lock:
            _born[thread] = _buffers.get(me) or _working.get(me) or _born.get(parent)
        started(thread)

    threading.Thread.start = start  # (the command's process only: harness.__main__)


def still_running() -> list[threading.Thread]:
    """Threads other than harness's that would keep the process from ending (the command's)."""
    return [t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread() and _harnesss.get(t.ident or 0) is not t]


def ours() -> None:
    """Mark this thread as harness's own (a batch's worker): it writes through, always."""
    thread = threading.current_thread()
    _harnesss[thread.ident or 0] = thread


def start() -> tuple:
    """Begin catching this thread's prints; what it returns is for `stop`."""
    global _depth, _proxies
    me, thread = threading.get_ident(), threading.current_thread()
    alive = threading.enumerate() if not _contained and threading.active_count() > 1 else None  # (most runs: one thread, nothing to list)
    if not _jobs_owned and "concurrent.futures.thread" in sys.modules:
        _own_jobs()
    with _lock:
        if not (_proxies is not None and sys.stdout is _proxies[0] and sys.stderr is _proxies[1]):
            if _proxies is None or _proxies[0].real is not sys.stdout or _proxies[1].real is not sys.stderr:  # made once per real stream
                _proxies = (_PerThread(sys.stdout), _PerThread(sys.stderr))
            sys.stdout, sys.stderr = _proxies
        _depth += 1
        _harnesss[me] = thread
        outer = _buffers.get(me), _began.get(me)  # a tool that imports a tool module: nested
        _began[me], _buffers[me] = alive, io.StringIO()  # made now: a tool's thread never makes one, so none outlives its call
    return outer


def stop(outer: tuple) -> str:
    """Stop catching this thread's prints (`outer`: what `start` returned): what it printed."""
    global _depth
    me = threading.get_ident()
    with _lock:
        printed = _buffers.pop(me)
        _began.pop(me)
        if outer[0] is not None:
            _buffers[me], _began[me] = outer
        _depth -= 1
        if _depth == 0 and not _contained and _proxies is not None:
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
