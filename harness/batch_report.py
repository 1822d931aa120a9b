"""What a batch tells: its progress on stderr as it runs, then a summary table on stdout, a
JSON report, a JUnit report and the exit code.

Progress on a terminal is one line, redrawn in place, with the runs done, the time, and
what each running scenario's model is doing, so a slow model (a token a moment ago) and a
hung one (no token for a minute) look different:

    runs ━━━━━━━──── 1/3 0:01:26 running 2 (weather call 1, no token yet after 1:02; nimbus
                                  call 2, last token 0.3 s ago) · 1 final_answer

Anywhere else (a CI log, a pipe) it is one plain line per finished run. A run's notes (what
its model dropped on arrival) are said as it ends, each on a line of its own.

The summary and the reports read the same Outcomes, in scenario order; model text is
escaped for each medium. Each report begins with a header of its own, so harness replaces
only a report it wrote. In JUnit a run is an error when it could not run, ended in
model_error or was canceled; a failure when --fail-on names its stop reason (or
`mismatch`, and its answer missed).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Collection, Sequence
from typing import IO

from harness.batch import Job, Outcome
from harness.escape import encodable, for_xml, one_line

JSON_HEADER = '{\n  "harness": "batch report v1"'
JUNIT_HEADER = '<?xml version="1.0" encoding="utf-8"?>\n<!-- harness batch report v1 -->\n'
ANSWER_WIDTH = 40  # characters of the final answer in the table
NAME_WIDTH = 120  # characters of a run's name in the table (the reports keep it whole)
MISSED_WIDTH = 400  # characters of what a mismatch missed, in the JUnit failure message
ERRORS = ("model_error", "canceled")
DETAIL = 200  # characters of a model error's detail on its line (the report has it whole)
SHOWN = 4  # running scenarios named on the bar, the longest silent first; the rest are counted
NAME = 30  # characters of a scenario's name on the bar
BAR = 20  # cells of the bar itself


def named(name: str, width: int = NAME_WIDTH) -> str:
    """A run's name as shown: its end, where a path's file name is, if it is long."""
    shown = one_line(name)
    return shown if len(shown) <= width else "…" + shown[-(width - 1) :]


def shortened(text: str | None, width: int = ANSWER_WIDTH) -> str:
    """The first line of an answer, at most `width` characters, shown and never obeyed."""
    if text is None:
        return "-"
    first = text.strip().split("\n", 1)[0]
    short = first[: width - 1] + "…" if len(first) > width or first != text.strip() else first
    return one_line(short)  # a tab shown as ␉: it would move the table's columns


def missed(o: Outcome, width: int = ANSWER_WIDTH) -> str:
    """What a mismatch missed, as the scenario states it: `expect "4"` or `expect_regex "^It is"`
    (quoted as JSON, so a space or a quote in it is seen; "" for a run that did not mismatch)."""
    if o.expected is not False or o.wanted is None:
        return ""
    field, wanted = o.wanted
    return f"{field} {shortened(json.dumps(wanted, ensure_ascii=False), width)}"


def marks(o: Outcome) -> dict[str, str]:
    """The run's marks by column, where it has them: expect (match, mismatch), check (replay --check: same, differs)."""
    out = {}
    if o.expected is not None:
        out["expect"] = "match" if o.expected else "mismatch"
    if o.same is not None:
        out["check"] = "same" if o.same else "differs"
    return out


def summary(outcomes: Sequence[Outcome], not_started: int = 0, what: str = "scenario") -> str:
    """The table, one row per run in the order given (`what` ran: scenario, or transcript
    for replays), then the counts of stop reasons and marks."""
    columns = [c for c in ("expect", "check") if any(c in marks(o) for o in outcomes)]  # shown when any run has one
    rows = [(what, "stop reason", "steps", "final answer", "seconds", "tokens", *columns)]
    for o in outcomes:
        ran = not o.error
        steps, seconds = (str(o.steps), f"{o.seconds:.2f}") if ran else ("-", "-")
        shown = {**marks(o), "expect": f"mismatch: {missed(o)}"} if missed(o) else marks(o)  # a mismatch says what it missed
        row = (named(o.name), o.stop_reason or "not run", steps, shortened(o.final_answer), seconds, "-" if o.tokens is None else str(o.tokens))
        rows.append(row + tuple(shown.get(c, "-") for c in columns))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {2, 4, 5}  # numbers line up on the right
    lines = ["  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip() for r in rows]
    reasons = Counter(o.stop_reason or "not run" for o in outcomes)  # then the counts, on one line
    parts = [f"{len(outcomes)} run{'s' if len(outcomes) != 1 else ''}: " + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))]
    for column in columns:
        counted = Counter(marks(o)[column] for o in outcomes if column in marks(o))
        parts.append(f"{column}: " + ", ".join(f"{n} {k}" for k, n in sorted(counted.items())))
    if not_started:
        parts.append(f"{not_started} not started (interrupted)")
    return "\n".join(lines) + "\n" + " · ".join(parts) + "\n"


def failed(o: Outcome, fail_on: Collection[str]) -> bool:
    """--fail-on names its stop reason, or `mismatch` and its answer was not the expected
    one; or it was a replay --check that did not give its file back."""
    return o.stop_reason in fail_on or ("mismatch" in fail_on and o.expected is False) or o.same is False


def exit_code(outcomes: Sequence[Outcome], fail_on: Collection[str], model_failed: bool = True) -> int:
    """2 one could not run; 3 one ended in model_error (unless not `model_failed`: a replay
    on its recorded turns ends where the recording did); 1 one failed; else 0."""
    if any(o.error for o in outcomes):
        return 2
    if model_failed and any(o.stop_reason == "model_error" for o in outcomes):
        return 3
    return 1 if any(failed(o, fail_on) for o in outcomes) else 0


def to_json(outcomes: Sequence[Outcome], not_started: int = 0) -> str:
    runs = []
    for o in outcomes:
        run = {
            "scenario": o.name,
            "stop_reason": o.stop_reason or None,
            "steps": o.steps,
            "final_answer": o.final_answer,
            "detail": o.detail,
            "seconds": round(o.seconds, 3),
            "tokens": o.tokens,
            "prompt_tokens": o.prompt_tokens,
            "completion_tokens": o.completion_tokens,
            "expect": marks(o).get("expect"),
            "expected": None if o.wanted is None else dict([o.wanted]),
            "transcript": None if o.transcript is None else str(o.transcript),
            "error": o.error or None,
        }
        # A name that is not UTF-8 (its byte 0xff held as "\udcff") is written as the summary
        # shows it, x\xffy: json.dumps would write the lone surrogate, which strict readers refuse.
        runs.append({k: encodable(v) if isinstance(v, str) else v for k, v in run.items()})
    report = {"harness": "batch report v1", "runs": runs, "not_started": not_started}
    return json.dumps(report, indent=2) + "\n"  # ASCII: every other character as \u


def to_junit(outcomes: Sequence[Outcome], fail_on: Collection[str]) -> str:
    import xml.etree.ElementTree as ET

    errors = [bool(o.error) or o.stop_reason in ERRORS for o in outcomes]
    failures = [not error and failed(o, fail_on) for o, error in zip(outcomes, errors)]
    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", name="harness run", tests=str(len(outcomes)), errors=str(sum(errors)), failures=str(sum(failures)))
    suite.set("time", f"{sum(o.seconds for o in outcomes):.3f}")
    for o, error, failure in zip(outcomes, errors, failures):
        case = ET.SubElement(suite, "testcase", classname="harness", name=for_xml(o.name), time=f"{o.seconds:.3f}")
        if error:
            message = o.error or f"{o.stop_reason}: {o.detail}".rstrip(": ")
            ET.SubElement(case, "error", type=o.stop_reason or "not_loaded", message=for_xml(message))
        elif failure:
            kind = o.stop_reason if o.stop_reason in fail_on else "mismatch"
            answer = "no final answer" if o.final_answer is None else f"final answer {json.dumps(o.final_answer, ensure_ascii=False)}"
            wanted = f"; {missed(o, MISSED_WIDTH)}" if kind == "mismatch" and missed(o) else ""
            ET.SubElement(case, "failure", type=kind, message=for_xml(f"{kind}: {answer}{wanted}"))
        shown = "-" if o.final_answer is None else o.final_answer  # as the table shows a run without one
        out = [f"stop reason: {o.stop_reason or 'not run'}, {o.steps} step{'' if o.steps == 1 else 's'}", f"final answer: {shown}"]
        if o.wanted is not None:
            out.append(f"{o.wanted[0]}: {o.wanted[1]}")
        if o.transcript is not None:
            out.append(f"transcript: {o.transcript}")
        ET.SubElement(case, "system-out").text = for_xml("\n".join(out))
    ET.indent(root)
    return JUNIT_HEADER + ET.tostring(root, encoding="unicode") + "\n"


DOING = {  # what a run is doing, by the last thing heard: its start, or its model's call (opened), token or end (of the call)
    "start": "starting, {silent}",
    "call": "call {call}, no token yet after {silent}",
    "token": "call {call}, last token {silent} ago",
    "end": "after call {call}, in code for {silent}",
}


class Progress:
    """The batch's progress on `out`: the bar on a terminal, else a line per finished run.
    `heard` comes from the runs' threads and only notes what it heard; lines are written
    from the batch's own thread (`finished`, `say`, `tick`, `end`)."""

    def __init__(self, out: IO[str], total: int) -> None:
        self.out, self.total, self.done, self.bar = out, total, 0, out.isatty()
        self.lock, self.reasons, self.start = threading.Lock(), Counter(), time.monotonic()
        self.runs: dict[int, tuple[float, str, int, str]] = {}  # id(job) -> (since, name, calls so far, last thing heard)

    def heard(self, job: Job, what: str) -> None:
        """What a run just did: "start", then its model's "call", "token" or "end"."""
        with self.lock:
            call = 0 if what == "start" else self.runs[id(job)][2]
            self.runs[id(job)] = (time.monotonic(), job.name, call + (what == "call"), what)

    def finished(self, job: Job, o: Outcome) -> None:
        """A run's notes (what its model dropped on arrival), each on a line of its own, then
        the bar redrawn or the run's line: `[3/8] nimbus: final_answer, 4 steps, 0.12 s`."""
        self.done += 1
        with self.lock:
            self.runs.pop(id(job), None)
            self.reasons[o.stop_reason or "not run"] += 1
        for note in o.notes:
            self.say(f"note: {o.name}: {note}")
        if self.bar:
            return self.tick()
        self.out.write(one_line(f"[{self.done}/{self.total}] {o.name}: {_ended(o)}") + "\n")
        self.out.flush()

    def say(self, text: str) -> None:
        """A line of the batch's own, above the bar if there is one."""
        self.out.write(("\r\x1b[K" if self.bar else "") + one_line(text) + "\n")
        self.out.flush()

    def tick(self) -> None:
        """Draw the bar afresh (the times move on), cut to the terminal's width (stdout may be
        a file by now): what runs, the longest silent first, then the stop reasons so far."""
        if not self.bar:
            return
        now = time.monotonic()
        with self.lock:
            runs = sorted(self.runs.values())  # the longest silent first
            reasons = ", ".join(f"{n} {r}" for r, n in sorted(self.reasons.items()))
        filled, elapsed = BAR * self.done // max(1, self.total), int(now - self.start)
        doing = "; ".join(_doing(*run, now) for run in runs[:SHOWN]) + (f"; {len(runs) - SHOWN} more" if len(runs) > SHOWN else "")
        line = f"runs {'━' * filled}{'─' * (BAR - filled)} {self.done}/{self.total} {elapsed // 3600}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d} running {len(runs)}"
        line += (f" ({doing})" if runs else "") + (f" · {reasons}" if reasons else "")
        try:
            width = os.get_terminal_size(self.out.fileno()).columns
        except (OSError, ValueError):
            width = 80
        self.out.write(f"\r\x1b[K{line[: width - 1]}")
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


def _doing(since: float, name: str, call: int, last: str, now: float) -> str:
    silent = now - since
    shown = f"{silent:.1f} s" if silent < 60 else f"{int(silent // 60)}:{int(silent % 60):02d}"
    return f"{named(name, NAME)} " + DOING[last].format(call=call, silent=shown)
