"""Progress of a batch, on stderr, so that stdout keeps the summary.

On a terminal: a rich progress bar (runs done / total, elapsed, the stop reasons so far)
and what is running: each running scenario with its model call and the time since its
model's last token, so a slow model (a token a moment ago) and a hung one (no token for a
minute) look different:

    runs ━━━━━━━━━━━━ 1/3 0:01:26 running 2 (weather call 1, no token yet after 1:02; nimbus
                                  call 2, last token 0.3 s ago) · 1 final_answer

Anywhere else (a CI log, a pipe): one plain line per finished run, with its stop reason,
steps, seconds and tokens when known, so the log is never silent for long and reads in
order. A run's notes (what its model dropped on arrival) are said as it ends, each on a
line of its own (on a terminal: printed above the bar, never onto its line).
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import IO

from harness.batch import Job, Outcome
from harness.batch_report import one_line


DETAIL = 200  # characters of a model error's detail on its line (the report has it whole)
SHOWN = 4  # running scenarios named on the bar, the longest silent first; the rest are counted
NAME = 30  # characters of a scenario's name on the bar


def note_lines(o: Outcome) -> list[str]:
    """A run's notes as `note: NAME: TEXT` lines, shown and never obeyed."""
    return [one_line(f"note: {o.name}: {note}") for note in o.notes]


class Lines:
    """One line per finished run: `[3/8] nimbus: final_answer, 4 steps, 0.12 s, 310 tokens`."""

    def __init__(self, out: IO[str], total: int) -> None:
        self.out, self.total, self.done = out, total, 0

    def started(self, job: Job) -> None:
        pass

    def heard(self, job: Job, what: str) -> None:
        pass  # a log gets a line per finished run, not per token

    def finished(self, o: Outcome) -> None:
        self.done += 1
        for line in note_lines(o):
            self.out.write(line + "\n")
        if o.error:
            what = f"not run: {o.error}"
        else:
            what = f"{o.stop_reason}, {o.steps} step{'s' if o.steps != 1 else ''}, {o.seconds:.2f} s"
            if o.prompt_tokens is not None or o.completion_tokens is not None:
                what += f", {(o.prompt_tokens or 0) + (o.completion_tokens or 0)} tokens"
            if o.same is not None:  # replay --check
                what += ", same as the file" if o.same else ", differs from the file"
            if o.stop_reason == "model_error":  # why, in the log, as a single run's error line says
                what += f": {o.detail[:DETAIL]}" + ("…" if len(o.detail) > DETAIL else "")
        self.out.write(one_line(f"[{self.done}/{self.total}] {o.name}: {what}") + "\n")
        self.out.flush()


@dataclass(frozen=True)
class _Run:
    """What one running scenario's model is doing, as the bar shows it."""

    name: str
    call: int = 0  # its model calls so far (0: none yet)
    streaming: bool = False  # a call is open
    tokens: bool = False  # and has sent a chunk
    since: float = 0.0  # time.monotonic() of the last thing heard: start, call, token or end


class Bar:
    """A rich progress bar; `started` and `heard` are called from the runs' threads."""

    def __init__(self, out: IO[str], total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.lock, self.reasons = threading.Lock(), Counter()
        self.runs: dict[int, _Run] = {}  # the running ones, by id(job)
        self.progress = Progress(
            TextColumn("runs"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            _running_column(self),
            console=Console(file=out, highlight=False, width=_width(out)),
            auto_refresh=False,  # rich's own refresh thread is not harness's: it would print nowhere (harness.captured)
        )
        self.task = self.progress.add_task("", total=total)

    def text(self, now: float) -> str:
        """The bar's words, drawn afresh at each refresh: what runs, then the stop reasons so far."""
        with self.lock:
            runs = sorted(self.runs.values(), key=lambda r: r.since)  # the longest silent first
            reasons = ", ".join(f"{n} {r}" for r, n in sorted(self.reasons.items()))
        doing = "; ".join(_doing(run, now - run.since) for run in runs[:SHOWN])
        more = f"; {len(runs) - SHOWN} more" if len(runs) > SHOWN else ""
        return f"running {len(runs)}" + (f" ({doing}{more})" if runs else "") + (f" · {reasons}" if reasons else "")

    def started(self, job: Job) -> None:
        with self.lock:
            self.runs[id(job)] = _Run(job.name, since=time.monotonic())

    def heard(self, job: Job, what: str) -> None:
        with self.lock:
            run = self.runs.get(id(job))
            if run is None:
                return
            if what == "call":
                run = replace(run, call=run.call + 1, streaming=True, tokens=False)
            elif what == "token":
                run = replace(run, tokens=True)
            else:
                run = replace(run, streaming=False)
            self.runs[id(job)] = replace(run, since=time.monotonic())

    def finished(self, o: Outcome) -> None:
        for line in note_lines(o):  # through the bar's console: a line of its own, above the bar
            self.progress.console.print(line, markup=False, highlight=False, soft_wrap=True)
        with self.lock:
            ended = next((key for key, run in self.runs.items() if run.name == o.name), None)
            self.runs.pop(ended, None)
            self.reasons[o.stop_reason or "not run"] += 1
        self.progress.update(self.task, advance=1)


def _doing(run: _Run, silent: float) -> str:
    name = run.name if len(run.name) <= NAME else "…" + run.name[-(NAME - 1) :]
    if run.call == 0:
        what = f"starting, {_seconds(silent)}"
    elif not run.streaming:
        what = f"after call {run.call}, in code for {_seconds(silent)}"
    elif run.tokens:
        what = f"call {run.call}, last token {_seconds(silent)} ago"
    else:
        what = f"call {run.call}, no token yet after {_seconds(silent)}"
    return one_line(f"{name} {what}")


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 60 else f"{int(s // 60)}:{int(s % 60):02d}"


def _running_column(bar: Bar):
    """A rich column that asks the bar for its words at every refresh (the times move on)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Running(ProgressColumn):
        def render(self, task) -> Text:
            return Text(bar.text(time.monotonic()))

    return Running()


def _width(out: IO[str]) -> int | None:
    """The terminal's own width (rich would ask stdout, which may be a file by now)."""
    try:
        return os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError):
        return None


@contextmanager
def progress_for(out: IO[str], total: int) -> Iterator[Lines | Bar]:
    if not out.isatty():
        yield Lines(out, total)
        return
    bar = Bar(out, total)
    with bar.progress:
        stop = threading.Event()
        ticker = threading.Thread(target=_tick, args=(bar, stop), name="harness-progress", daemon=True)
        ticker.start()
        try:
            yield bar
        finally:
            stop.set()
            ticker.join()
            bar.progress.refresh()  # the last counts, as the bar is left on the screen


def _tick(bar: Bar, stop: threading.Event) -> None:
    """Redraw the bar a few times a second, so its times move on while nothing else happens."""
    from harness import captured

    captured.ours()  # what this thread prints is harness's output
    while not stop.wait(0.25):
        bar.progress.refresh()
