"""Bounds on every model call: tokens, characters and seconds.

    Bounds(max_tokens=512, max_chars=100_000, max_seconds=300.0)   the defaults

`max_tokens` is asked of the model (the server, or llama.cpp, stops there: finish reason
`length`). The other two are enforced here, by the client, whatever the model does:
a completion longer than `max_chars` characters, or a call (connecting, waiting, reading,
all of it) longer than `max_seconds`, is ended with a ModelError that names the bound and
its option, so the run stops in `model_error`, is saved, and replays to the same end.
A runaway stream therefore costs at most `max_chars` characters of memory and
`max_seconds` of waiting, not a per-read timeout that a server dripping one byte a second
resets forever.

Chosen over a new stop reason: a bound that is hit means the model did not answer in
time or in size; the completion read so far is not kept (it is the part of a reply that
never ended), and the detail says which bound and how to raise it.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from typing import Any

from harness.model import ModelError
from harness.values import value


@value
class Bounds:
    max_tokens: int = 512  # asked of the model
    max_chars: int = 100_000  # characters of completion text read from one call
    max_seconds: float = 300.0  # the whole call, from the request to the last byte


DEFAULTS = Bounds()  # what a backend takes when it is given no bound


class Budget:
    """One call's bounds while it runs: `spend` each piece of text as it arrives."""

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self.deadline = time.monotonic() + bounds.max_seconds
        self.chars = 0

    def spend(self, chars: int) -> None:
        self.chars += chars
        if self.chars > self.bounds.max_chars:
            raise ModelError(
                f"the completion passed {self.bounds.max_chars:,} characters without ending; "
                "the call was stopped (raise --max-chars, or lower --max-tokens)"
            )
        if time.monotonic() > self.deadline:
            raise self.late()

    def late(self) -> ModelError:
        return ModelError(f"the call passed its time limit of {self.bounds.max_seconds:g} s; the call was stopped (raise --max-seconds)")

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


class Watchdog:
    """Ends a read that blocks past the deadline: at the deadline it shuts the socket down,
    which wakes the blocked read at once (a per-read timeout would wait again for each byte)."""

    def __init__(self, seconds: float) -> None:
        self.fired = self.canceled = False
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        ALARMS.add(time.monotonic() + seconds, self)

    def watch(self, response: Any) -> None:
        """The socket under an httpx response (httpcore's `network_stream` extension)."""
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        with self._lock:
            self._socket = sock
            if self.fired:
                self._shut()

    def cancel(self) -> None:
        with self._lock:
            self.canceled, self._socket = True, None
        ALARMS.forget()

    def fire(self) -> None:
        with self._lock:
            if not self.canceled:
                self.fired = True
                self._shut()

    def _shut(self) -> None:
        if self._socket is not None:
            try:
                self._socket.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed: the call is over anyway
                pass


class Alarms:
    """Every call's deadline, kept by one thread (a Timer a call would start a thread a call:
    a quarter of a millisecond each, on the path of every call). A canceled watchdog stays
    in the heap until its time comes or the canceled ones are half of it; then they go."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Watchdog]] = []
        self._order = itertools.count()  # ties on the deadline never compare watchdogs
        self._canceled = 0
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, deadline: float, dog: Watchdog) -> None:
        with self._wake:
            if self._canceled * 2 > len(self._heap):
                self._heap = [entry for entry in self._heap if not entry[2].canceled]
                heapq.heapify(self._heap)
                self._canceled = 0
            heapq.heappush(self._heap, (deadline, next(self._order), dog))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="harness-deadlines", daemon=True)
                self._thread.start()
            if self._heap[0][2] is dog:  # sooner than the one the thread waits for
                self._wake.notify()

    def forget(self) -> None:
        with self._wake:
            self._canceled += 1

    def _run(self) -> None:
        with self._wake:
            while True:
                left = self._heap[0][0] - time.monotonic() if self._heap else None
                if left is None or left > 0:
                    self._wake.wait(left)
                    continue
                dog = heapq.heappop(self._heap)[2]
                if dog.canceled:
                    self._canceled -= 1
                else:
                    dog.fire()


ALARMS = Alarms()
