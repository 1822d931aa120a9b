"""Many runs at once: the single run repeated with bounded concurrency, in this one place.

    outcomes, interrupted = run_all(jobs, work, 4, Progress(sys.stderr, len(jobs)))

Runs wait on a model server, so a pool of threads is the scheduler. Ctrl-C reaches the
main thread: no new run starts, each running model raises KeyboardInterrupt at its next
chunk (`canceled`), and a call blocked on a stalled server is ended at once. A second
Ctrl-C stops waiting for runs stuck in a tool. An Outcome keeps the facts the summary
needs, never the transcript, so memory grows with the runs in flight.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, replace
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness import captured
from harness.errors import HarnessError
from harness.model import Around, Model
from harness.run_record import RunRecord
from harness.scenario import Scenario
from harness.transcript import Transcript


@dataclass(frozen=True, slots=True)
class Job:
    name: str  # the scenario's file name without .toml: its transcript is <name>.txt
    scenario: Scenario | None
    error: str = ""  # why it could not be loaded (then there is nothing to run)
    saved: Path | None = None  # or a saved transcript, to replay (`harness replay A B DIR`)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One finished run, as the summary and the reports read it."""

    name: str
    stop_reason: str = ""  # "" when the scenario could not be loaded or built
    steps: int = 0
    final_answer: str | None = None
    detail: str = ""
    seconds: float = 0.0
    prompt_tokens: int | None = None  # summed over the calls that were counted
    completion_tokens: int | None = None
    transcript: Path | None = None  # where it was saved (--save-dir)
    expected: bool | None = None  # the final answer matched the scenario's `expect` (None: none stated)
    wanted: tuple[str, str] | None = None  # what it was checked against: ("expect", "4") or ("expect_regex", pattern)
    error: str = ""  # the one line that says why it did not run
    same: bool | None = None  # replay --check: the replay gave the file back byte for byte (None: not checked)
    diff: str = ""  # and where it did not, the diff --check prints
    notes: tuple[str, ...] = ()  # what its model dropped on arrival, said as the run ends (harness.batch_report)

    @property
    def tokens(self) -> int | None:
        """Prompt and completion tokens together (None: no call counted either)."""
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)

    @classmethod
    def of(cls, name: str, record: RunRecord, **more: Any) -> Outcome:
        """What the summary needs of a finished run's record; `more`: the other fields."""

        def total(key: str) -> int | None:  # None when no call counted it
            counted = [c.tokens[key] for c in record.calls if c.tokens and c.tokens.get(key) is not None]
            return sum(counted) if counted else None

        facts = dict(stop_reason=record.stop_reason.value, steps=record.steps, final_answer=record.final_answer, detail=record.detail)
        return cls(name, prompt_tokens=total("prompt_tokens"), completion_tokens=total("completion_tokens"), **facts, **more)


STUCK = "still running at the second Ctrl-C (a tool that never returned?); not saved"
Wrap = Callable[[Model], Model]
Work = Callable[[Job, Wrap], Outcome]


def run_all(jobs: Sequence[Job], work: Work, workers: int, progress: Any, interrupt: Callable[[], Any] = lambda: None) -> tuple[list[Outcome | None], bool]:
    """Every job run by `work` in at most `workers` threads; the outcomes in the jobs'
    order (None for a run that never started), and whether Ctrl-C stopped the batch.
    `progress` (batch_report.Progress) hears each run in its thread; `interrupt` is called at Ctrl-C."""
    stop = threading.Event()

    def one(job: Job) -> Outcome | None:
        if stop.is_set():  # Ctrl-C came while it waited for a thread
            return None
        progress.heard(job, "start")
        start = time.perf_counter()
        try:
            outcome = work(job, lambda model: Cancelable(model, stop, lambda what: progress.heard(job, what)))
        except HarnessError as e:  # a template or tool found missing as it is built, a file that cannot be loaded or written
            outcome = Outcome(job.name, error=str(e))
        return replace(outcome, seconds=time.perf_counter() - start)

    outcomes: list[Outcome | None] = [None] * len(jobs)
    interrupted = abandoned = False
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="harness-run", initializer=captured.ours)  # (its notes write through)
    try:
        # Each run, as it ends, puts its future here: waiting costs the same with 1,000 runs queued.
        ended: queue.SimpleQueue[Future] = queue.SimpleQueue()
        pending: dict[Future, int] = {pool.submit(one, job): i for i, job in enumerate(jobs)}
        for future in pending:
            future.add_done_callback(ended.put)
        while pending:
            try:  # Ctrl-C may come anywhere in here, a second one too
                progress.tick()
                try:
                    future = ended.get(timeout=0.25)
                except queue.Empty:  # a quarter of a second: any run that ended and was lost to a Ctrl-C is queued again
                    for future in [f for f in pending if f.done()]:
                        ended.put(future)
                    continue
                if future not in pending:
                    continue
                outcome = None if future.cancelled() else future.result()
                i = pending.pop(future)
                if outcome is not None:
                    outcomes[i] = outcome
                    progress.finished(jobs[i], outcome)
            except KeyboardInterrupt:
                if interrupted:  # a second Ctrl-C: stop waiting for runs that do not end
                    for future, i in pending.items():
                        if future.running():
                            outcomes[i] = Outcome(jobs[i].name, "canceled", detail=STUCK)
                    abandoned = True
                    break
                interrupted = True
                stop.set()  # the running ones cancel at their next chunk,
                interrupt()  # or now, if a call of theirs is blocked
                for future in pending:
                    future.cancel()  # the waiting ones never start
                if any(future.running() for future in pending):  # (one in a tool ends only when the tool returns)
                    progress.say("interrupted: waiting for the running runs to stop; Ctrl-C again to leave them")
    finally:
        pool.shutdown(wait=not abandoned, cancel_futures=True)
    return outcomes, interrupted


class Cancelable(Around):
    """`model`, whose calls raise KeyboardInterrupt once `stop` is set, telling `heard` what
    they do (the progress bar's "call 2, last token 0.3 s ago")."""

    def __init__(self, model: Model, stop: threading.Event, heard: Callable[[str], Any] = lambda what: None) -> None:
        super().__init__(model)
        self.stop, self.heard = stop, heard

    def send(self, buffer: Transcript, stop: Sequence[str]) -> Iterator[Any]:
        return self._watch(self.model.send(buffer, stop))  # the call starts (or fails) as it would

    def _watch(self, chunks: Iterable[Any]) -> Iterator[Any]:
        try:
            if self.stop.is_set():  # a call that starts after Ctrl-C: canceled before its first chunk
                raise KeyboardInterrupt
            self.heard("call")
            for chunk in chunks:
                if self.stop.is_set():
                    raise KeyboardInterrupt
                self.heard("token")
                yield chunk
        except Exception:
            if self.stop.is_set():  # the call was ended by Ctrl-C (run_all's interrupt)
                raise KeyboardInterrupt from None
            raise
        finally:
            self.heard("end")
            if isinstance(chunks, Generator):
                chunks.close()
