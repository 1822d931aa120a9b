"""A proxy's cassette: a folder of ordinary transcripts, one per run, read back as calls.

Each run-NNN.txt is save format v1 with one key of its own, `proxy`: per call what a replay
needs besides the text. Prompts and completions come from the transcript, so an edited model
turn is what a replay answers.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence
from pathlib import Path

from harness.errors import HarnessError, TranscriptFormatError
from harness.events import StopReason
from harness.files import read_input, write_file
from harness.run_record import CallRecord, RunRecord
from harness.saved import load_record
from harness.traffic import Call, body, prompts, transcript
from harness.transcript import HEADER, Author, dumps, loads

ENTRY = {"params": dict, "rewritten": bool, "finish_reason": str, "tool_calls": list}  # what each call's entry holds


def run_text(run: Sequence[Call]) -> str:
    """One run in the save format: its record's metadata, and the proxy's own key."""
    buffer, rewritten = transcript(run)
    failed, done = run[-1].error, [call for call in run if not call.error]
    reason = StopReason.MODEL_ERROR if failed else StopReason.AGENT_STOPPED
    calls = tuple(CallRecord(tokens=call.tokens) for call in done)
    record = RunRecord(buffer, reason, steps=len(done), detail=failed, calls=calls, model=str(run[0].params.get("model", "")))
    per_call = [{"params": c.params, "rewritten": r, "finish_reason": c.finish_reason, "tool_calls": list(c.tool_calls)} for c, r in zip(run, rewritten)]
    return dumps(buffer, record.meta() | {"proxy": {"endpoint": run[0].endpoint, "calls": per_call}})


def claim(folder: Path) -> int:
    """The folder, made if need be and tried with a file, held for one recording proxy until
    `release` (or the process ends): two recording into one folder would overwrite each other."""
    import tempfile  # (only a recording proxy needs it)

    try:
        folder.mkdir(parents=True, exist_ok=True)
        held = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileExistsError:
        raise HarnessError(str(folder), "cannot record a cassette into it (Not a directory)") from None
    except OSError as e:
        raise HarnessError(str(folder), f"cannot record a cassette into it ({e.strerror})") from None
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(held)
        raise HarnessError(str(folder), "another harness proxy is recording into this cassette; stop it first") from None
    try:
        tempfile.TemporaryFile(dir=folder).close()  # the runs are written at the end: find out now that they can be
    except OSError as e:
        release(folder, held)
        raise HarnessError(str(folder), f"cannot record a cassette into it ({e.strerror})") from None
    return held


def release(folder: Path, held: int) -> None:
    """Let go of the folder; one left empty (nothing was recorded) is removed."""
    os.close(held)
    try:
        folder.rmdir()
    except OSError:
        pass  # it holds runs


def save(runs: Sequence[Sequence[Call]], folder: Path, replace: bool) -> list[Path]:
    """The runs written as run-NNN.txt, after the files already there or (`replace`) in their place."""
    old = sorted(folder.glob("run-*.txt"))
    start = 1 if replace else len(old) + 1
    written = []
    for number, run in enumerate(runs, start):
        path = folder / f"run-{number:03d}.txt"
        write_file(path, run_text(run), HEADER, "the cassette")
        written.append(path)
    if replace:
        for path in old[len(written) :]:
            path.unlink()
    return written


def load(folder: Path) -> list[list[Call]]:
    """The cassette's runs, each a list of the calls the proxy answers again."""
    return [_calls(read_input(path, TranscriptFormatError), str(path)) for path in sorted(folder.glob("run-*.txt"))]


def _calls(text: str, where: str) -> list[Call]:
    record, (_, meta) = load_record(text, where), loads(text, where)  # the record's fields checked as every reader does
    buffer, proxy = record.transcript, meta.get("proxy")
    if not (isinstance(proxy, dict) and proxy.get("endpoint") in ("completions", "chat") and isinstance(proxy.get("calls"), list)):
        raise TranscriptFormatError(f"{where}: metadata proxy", "must say the endpoint and list the calls (was this file written by harness proxy?)")
    entries, completions = proxy["calls"], buffer.texts_by(Author.MODEL)
    failed = record.stop_reason == "model_error"
    shaped = all(isinstance(e, dict) and all(isinstance(e.get(k), t) for k, t in ENTRY.items()) for e in entries)
    if len(entries) != len(completions) + failed or not shaped:
        why = "one entry per call, each with params (an object), rewritten (true or false), finish_reason and tool_calls (a list)"
        raise TranscriptFormatError(f"{where}: metadata proxy.calls", why)
    sent = prompts(buffer, [e["rewritten"] for e in entries], f"{where}: metadata proxy.calls")
    out = []
    for i, (entry, prompt) in enumerate(zip(entries, sent)):
        error = (record.detail or "the upstream failed") if i == len(completions) else ""
        used = record.calls[i].tokens if i < len(record.calls) else None
        completion = completions[i] if not error else ""
        call = Call(prompt, completion, proxy["endpoint"], entry["params"], tuple(entry["tool_calls"]), entry["finish_reason"], used, error)
        content(call, f"{where}: model turn {i + 1}")  # checked now, not when a request comes
        out.append(call)
    return out


def content(call: Call, where: str) -> str | None:
    """A chat answer's content: its model turn without the tool call lines `body` added."""
    if not call.tool_calls:
        return call.completion
    lines = body({"tool_calls": list(call.tool_calls)}, where)
    if call.completion == lines:
        return None
    if not call.completion.endswith("\n" + lines):
        raise TranscriptFormatError(where, "does not end with the tool calls its metadata lists")
    return call.completion[: -len(lines) - 1]
