"""A saved transcript read back into a RunRecord, every metadata field checked.

A saved file is untrusted input (people mail them; CI replays them on pull requests):
anything of the wrong shape is a TranscriptFormatError naming the field, never a crash later.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.errors import TranscriptFormatError
from harness.events import StopReason
from harness.files import Fields
from harness.run_record import CallRecord, RunRecord
from harness.scenario import Scenario
from harness.source import from_meta
from harness.transcript import Author, loads

_STEP = r"[1-9][0-9]{0,8}"  # a step number in `cuts`, ASCII digits only: "²".isdigit() is true, int("²") fails


def load_record(text: str, source: str = "<transcript>", base: Path | None = None) -> RunRecord:
    """A saved file as a RunRecord; `base` is the folder a template or tool of its own is in."""
    if not isinstance(text, str):  # bytes too: which encoding they are in is the caller's to say
        raise TranscriptFormatError(f"{source}: load_record(text)", f"must be the saved file's text, a str, not {type(text).__name__}")
    transcript, meta = loads(text, source)
    read = Fields(meta, f"{source}: metadata ", TranscriptFormatError)
    fail = read.fail
    reason = read.choice("stop_reason", tuple(StopReason), StopReason.MAX_STEPS.value)  # a file without one has not finished
    answer = read.optional("final_answer")
    steps = read.count("steps", 0)
    detail = read.text("detail", "")
    replies = transcript.texts_by(Author.MODEL)
    model_calls = len(replies)
    if "steps" in meta and not model_calls <= steps <= model_calls + 1:  # a step is a model call (one canceled before its first text, too)
        raise fail("steps", f"must be the number of model calls, {model_calls} (or one more, if the last was canceled); it is {steps}")
    cuts = {}
    for key, cut in read.table("cuts", "must map step numbers to text").items():
        if not (re.fullmatch(_STEP, key) and 1 <= int(key) <= model_calls) or not isinstance(cut, str):
            raise fail("cuts", f"must map step numbers (1 to {model_calls}) to text; {key!r} does not")
        cuts[int(key)] = cut
    calls = _calls(meta.get("calls"), replies, cuts, fail)
    scenario = None
    if "scenario" in meta:
        fields = read.table("scenario", "must be a table of the scenario's fields")
        scenario = Scenario.from_dict(fields, f"{source}: metadata scenario", base, TranscriptFormatError)
    model = meta.get("model", "")
    if not isinstance(model, str) or len(model) > 1000:
        raise fail("model", "must be the model's name, a string")
    source_ = from_meta(meta["source"], source) if "source" in meta else None
    endpoint = scenario.endpoint if scenario is not None else "completions"
    return RunRecord(transcript, StopReason(reason), answer, steps, detail, calls, scenario, source=source_, model=model, endpoint=endpoint)


def _calls(value: Any, replies: list[str], cuts: dict[int, str], fail) -> tuple[CallRecord, ...]:
    """Files written before `calls` existed still load: their calls carry only the cuts."""
    model_calls = len(replies)
    if value is None:
        return tuple(CallRecord(cuts.get(i, ""), "stop" if cuts.get(i) else "") for i in range(1, model_calls + 1))
    if not isinstance(value, list) or len(value) != model_calls:
        raise fail("calls", f"must be a list with one entry per model call ({model_calls})")
    out = []
    for i, entry in enumerate(value, 1):
        if not isinstance(entry, dict):
            raise fail("calls", f"entry {i} must be a table")
        ran, told, cut_by, tokens = entry.get("ran", []), entry.get("notices", []), entry.get("cut_by", ""), entry.get("tokens")
        strings = all(isinstance(names, list) and all(isinstance(v, str) for v in names) for names in (ran, told))
        if not strings or cut_by not in ("", "stop", "prefix"):
            raise fail("calls", f"entry {i}: ran and notices must be lists of strings, cut_by stop or prefix")
        if tokens is not None and not (
            isinstance(tokens, dict) and all(v is None or (type(v) is int and v >= 0) for v in tokens.values())
        ):  # `true`, "nine", 1e999 (Infinity), -1: refused here, in one line, not later in a view
            raise fail("calls", f"entry {i}: tokens must map names to whole numbers, 0 or more")
        hidden = _hidden(entry.get("hidden", []), len(replies[i - 1]))
        if hidden is None:
            raise fail("calls", f"entry {i}: hidden must list [start, end, \"action\" or \"answer\"], in order, within the reply")
        messages = entry.get("messages")
        if messages is not None and (type(messages) is not int or messages < 1):
            raise fail("calls", f"entry {i}: messages must be a whole number, 1 or more")
        out.append(CallRecord(cuts.get(i, ""), cut_by, tuple(ran), tuple(told), tokens, hidden, messages))
    return tuple(out)


def _hidden(value: Any, length: int) -> tuple[tuple[int, int, str], ...] | None:
    """The parts of a reply the user was not shown, checked: None if they are not that."""
    if not isinstance(value, list):
        return None
    out, after = [], 0
    for item in value:
        if not (isinstance(item, list) and len(item) == 3 and item[2] in ("action", "answer")):
            return None
        start, end = item[0], item[1]
        if type(start) is not int or type(end) is not int or not after <= start < end <= length:
            return None
        out.append((start, end, item[2]))
        after = end
    return tuple(out)
