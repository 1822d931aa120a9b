"""Progress of a batch, on stderr, so that stdout keeps the summary.

On a terminal: one line, redrawn in place, with the runs done, the time, and what each
running scenario's model is doing, so a slow model (a token a moment ago) and a hung one
(no token for a minute) look different:

    runs ━━━━━━━──── 1/3 0:01:26 running 2 (weather call 1, no token yet after 1:02; nimbus
                                  call 2, last token 0.3 s ago) · 1 final_answer

Anywhere else (a CI log, a pipe): one plain line per finished run, in order. A run's notes
(what its model dropped on arrival) are said as it ends, each on a line of its own.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import IO

from harness.batch import Job, Outcome
from harness.escape import one_line

DETAIL = 200  # characters of a model error's detail on its line (the report has it whole)
SHOWN = 4  # running scenarios named on the bar, the longest silent first; the rest are counted
NAME = 30  # characters of a scenario's name on the bar
BAR = 20  # cells of the bar itself


@dataclass(frozen=True)
class _Run:
    """What one running scenario's model is doing, as the bar shows it."""

    name: str
    call: int = 0  # its model calls so far (0: none yet)
    last: str = "start"  # the last thing heard: "start", "call" (opened), "token" or "end" (of the call)
    since: float = 0.0  # time.monotonic() when it was heard


DOING = {  # what a run is doing, by the last thing heard
    "start": "starting, {silent}",
    "call": "call {call}, no token yet after {silent}",
    "token": "call {call}, last token {silent} ago",
    "end": "after call {call}, in code for {silent}",
}


class Progress:
    """The batch's progress on `out`: the bar on a terminal, else a line per finished run.
    `heard` comes from the runs' threads and only notes what it heard; lines are written
    from the batch's own thread (`finished`, `tick`, `end`)."""

    def __init__(self, out: IO[str], total: int) -> None:
        self.out, self.total, self.done, self.bar = out, total, 0, out.isatty()
        self.lock, self.reasons, self.start = threading.Lock(), Counter(), time.monotonic()
        self.runs: dict[int, _Run] = {}  # the running ones, by id(job)

    def heard(self, job: Job, what: str) -> None:
        """What a run just did: "start", then its model's "call", "token" or "end"."""
        with self.lock:
            call = 0 if what == "start" else self.runs[id(job)].call
            self.runs[id(job)] = _Run(job.name, call + (what == "call"), what, time.monotonic())

    def finished(self, job: Job, o: Outcome) -> None:
        """A run's notes (what its model dropped on arrival), each on a line of its own, then
        the bar redrawn or the run's line: `[3/8] nimbus: final_answer, 4 steps, 0.12 s`."""
        self.done += 1
        with self.lock:
            self.runs.pop(id(job), None)
            self.reasons[o.stop_reason or "not run"] += 1
        for note in o.notes:  # above the bar, if there is one
            self.out.write(("\r\x1b[K" if self.bar else "") + one_line(f"note: {o.name}: {note}") + "\n")
        if self.bar:
            return self.tick()
        self.out.write(one_line(f"[{self.done}/{self.total}] {o.name}: {_ended(o)}") + "\n")
        self.out.flush()

    def tick(self) -> None:
        """Draw the bar afresh (the times move on), cut to the terminal's width: what runs,
        the longest silent first, then the stop reasons so far."""
        if not self.bar:
            return
        now = time.monotonic()
        with self.lock:
            runs = sorted(self.runs.values(), key=lambda r: r.since)
            reasons = ", ".join(f"{n} {r}" for r, n in sorted(self.reasons.items()))
        filled, elapsed = BAR * self.done // max(1, self.total), int(now - self.start)
        doing = "; ".join(_doing(run, now - run.since) for run in runs[:SHOWN]) + (f"; {len(runs) - SHOWN} more" if len(runs) > SHOWN else "")
        line = f"runs {'━' * filled}{'─' * (BAR - filled)} {self.done}/{self.total} {elapsed // 3600}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d} running {len(runs)}"
        line += (f" ({doing})" if runs else "") + (f" · {reasons}" if reasons else "")
        self.out.write(f"\r\x1b[K{line[: _width(self.out) - 1]}")
        self.out.flush()

    def end(self) -> None:
        if self.bar:
            self.tick()
            self.out.write("\n")  # the last counts stay on the screen


def _ended(o: Outcome) -> str:
    if o.error:
        return f"not run: {o.error}"
    what = f"{o.stop_reason}, {o.steps} step{'s' if o.steps != 1 else ''}, {o.seconds:.2f} s"
    if o.tokens is not None:
        what += f", {o.tokens} tokens"
    if o.same is not None:  # replay --check
        what += ", same as the file" if o.same else ", differs from the file"
    if o.stop_reason == "model_error":  # why, in the log, as a single run's error line says
        what += f": {o.detail[:DETAIL]}" + ("…" if len(o.detail) > DETAIL else "")
    return what


def _doing(run: _Run, silent: float) -> str:
    name = run.name if len(run.name) <= NAME else "…" + run.name[-(NAME - 1) :]
    return one_line(f"{name} " + DOING[run.last].format(call=run.call, silent=_seconds(silent)))


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 60 else f"{int(s // 60)}:{int(s % 60):02d}"


def _width(out: IO[str]) -> int:
    """The terminal's own width (stdout may be a file by now)."""
    try:
        return os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError):
        return 80
