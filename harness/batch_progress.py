"""Progress of a batch, on stderr, so that stdout keeps the summary.

On a terminal: a rich progress bar (runs done / total, running now, elapsed, the stop
reasons so far). Anywhere else (a CI log, a pipe): one plain line per finished run, with
its stop reason, steps, seconds and tokens when known, so the log is never silent for
long and reads in order.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from harness.batch import Job, Outcome
from harness.batch_report import one_line


DETAIL = 200  # characters of a model error's detail on its line (the report has it whole)


class Lines:
    """One line per finished run: `[3/8] nimbus: final_answer, 4 steps, 0.12 s, 310 tokens`."""

    def __init__(self, out: IO[str], total: int) -> None:
        self.out, self.total, self.done = out, total, 0

    def started(self, job: Job) -> None:
        pass

    def finished(self, o: Outcome) -> None:
        self.done += 1
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


class Bar:
    """A rich progress bar; `started` is called from the runs' threads."""

    def __init__(self, out: IO[str], total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.lock, self.running, self.reasons = threading.Lock(), 0, Counter()
        self.progress = Progress(
            TextColumn("runs"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}", markup=False),
            console=Console(file=out, highlight=False, width=_width(out)),
        )
        self.task = self.progress.add_task(self._text(), total=total)

    def _text(self) -> str:
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(self.reasons.items()))
        return f"running {self.running}" + (f" · {reasons}" if reasons else "")

    def started(self, job: Job) -> None:
        with self.lock:
            self.running += 1
            self.progress.update(self.task, description=self._text())

    def finished(self, o: Outcome) -> None:
        with self.lock:
            self.running -= 1
            self.reasons[o.stop_reason or "not run"] += 1
            self.progress.update(self.task, advance=1, description=self._text())


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
        yield bar
