"""What a batch tells at its end: a summary table, a JSON report, a JUnit report, the exit code.

All read the same Outcomes, in scenario order; model text is escaped for each medium. Each
report begins with a header of its own, so harness replaces only a report it wrote. In
JUnit a run is an error when it could not run, ended in model_error or was canceled; a
failure when --fail-on names its stop reason (or `mismatch`, and its answer missed).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from harness.batch import Outcome
from harness.escape import encodable, for_xml, one_line

JSON_HEADER = '{\n  "harness": "batch report v1"'
JUNIT_HEADER = '<?xml version="1.0" encoding="utf-8"?>\n<!-- harness batch report v1 -->\n'
ANSWER_WIDTH = 40  # characters of the final answer in the table
NAME_WIDTH = 120  # characters of a run's name in the table (the reports keep it whole)
MISSED_WIDTH = 400  # characters of what a mismatch missed, in the JUnit failure message
ERRORS = ("model_error", "canceled")


def named(name: str) -> str:
    """A run's name for the table: its end, where a path's file name is, if it is long."""
    shown = one_line(name)
    return shown if len(shown) <= NAME_WIDTH else "…" + shown[-(NAME_WIDTH - 1) :]


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
    """The run's marks, by column: `expect` (match or mismatch) and `check` (replay --check:
    same or differs), where it has them."""
    out = {}
    if o.expected is not None:
        out["expect"] = "match" if o.expected else "mismatch"
    if o.same is not None:
        out["check"] = "same" if o.same else "differs"
    return out


def summary(outcomes: Sequence[Outcome], not_started: int = 0, what: str = "scenario") -> str:
    """The table, one row per run in the order given (`what` ran: scenario, or transcript
    for replays), then the counts."""
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
    return "\n".join(lines) + "\n" + counts_line(outcomes, not_started) + "\n"


def counts_line(outcomes: Sequence[Outcome], not_started: int = 0) -> str:
    reasons = Counter(o.stop_reason or "not run" for o in outcomes)
    parts = [f"{len(outcomes)} run{'s' if len(outcomes) != 1 else ''}: " + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))]
    for column in ("expect", "check"):
        if counted := Counter(marks(o)[column] for o in outcomes if column in marks(o)):
            parts.append(f"{column}: " + ", ".join(f"{n} {k}" for k, n in sorted(counted.items())))
    if not_started:
        parts.append(f"{not_started} not started (interrupted)")
    return " · ".join(parts)


def failed(o: Outcome, fail_on: Iterable[str]) -> bool:
    """--fail-on names its stop reason, or `mismatch` and its answer was not the expected
    one; or it was a replay --check that did not give its file back."""
    names = set(fail_on)
    return o.stop_reason in names or ("mismatch" in names and o.expected is False) or o.same is False


def exit_code(outcomes: Sequence[Outcome], fail_on: Iterable[str], model_failed: bool = True) -> int:
    """2 one could not run; 3 one ended in model_error (unless not `model_failed`: a replay
    on its recorded turns ends where the recording did); 1 one failed; else 0."""
    if any(o.error for o in outcomes):
        return 2
    if model_failed and any(o.stop_reason == "model_error" for o in outcomes):
        return 3
    return 1 if any(failed(o, fail_on) for o in outcomes) else 0


def as_dict(o: Outcome) -> dict[str, Any]:
    return {
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
        "expected": None if o.wanted is None else {o.wanted[0]: o.wanted[1]},
        "transcript": None if o.transcript is None else str(o.transcript),
        "error": o.error or None,
    }


def to_json(outcomes: Sequence[Outcome], not_started: int = 0) -> str:
    # A name that is not UTF-8 (its byte 0xff held as "\udcff") is written as the summary
    # shows it, x\xffy: json.dumps would write the lone surrogate, which strict readers refuse.
    runs = [{k: encodable(v) if isinstance(v, str) else v for k, v in as_dict(o).items()} for o in outcomes]
    report = {"harness": "batch report v1", "runs": runs, "not_started": not_started}
    return json.dumps(report, indent=2) + "\n"  # ASCII: every other character as \u


def to_junit(outcomes: Sequence[Outcome], fail_on: Iterable[str]) -> str:
    import xml.etree.ElementTree as ET

    fail_on = set(fail_on)
    suite = ET.Element("testsuite", name="harness run", tests=str(len(outcomes)))
    errors = failures = 0
    for o in outcomes:
        case = ET.SubElement(suite, "testcase", classname="harness", name=for_xml(o.name), time=f"{o.seconds:.3f}")
        if o.error or o.stop_reason in ERRORS:
            errors += 1
            message = o.error or f"{o.stop_reason}: {o.detail}".rstrip(": ")
            ET.SubElement(case, "error", type=o.stop_reason or "not_loaded", message=for_xml(message))
        elif failed(o, fail_on):
            failures += 1
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
    suite.set("errors", str(errors))
    suite.set("failures", str(failures))
    suite.set("time", f"{sum(o.seconds for o in outcomes):.3f}")
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return JUNIT_HEADER + ET.tostring(root, encoding="unicode") + "\n"

