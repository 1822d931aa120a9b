"""The run for programs, as JSON: the whole run as one object (`--format json`), or each
event as one JSON Lines object as it happens (`--format events`):

    {"event": "round_started", "step": 1, "prompt_chars": 612}

The object holds the save format's metadata (RunRecord.meta), then the buffer as spans and
as one text; `detail` and `model` are always there ("" when the save format leaves them out).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict

from harness.escape import for_json
from harness.events import Event
from harness.run_record import RunRecord


def to_json(record: RunRecord) -> str:
    meta = record.meta()
    shown = {**meta, "detail": meta.get("detail", ""), "model": meta.get("model", "")}
    shown["spans"] = [{"author": s.author.value, "text": s.text} for s in record.transcript.spans]
    shown["buffer"] = record.transcript.text
    return for_json(json.dumps(shown, ensure_ascii=False, indent=2))


def event_line(event: Event) -> str:
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", type(event).__name__).lower()  # RoundStarted -> round_started
    return for_json(json.dumps({"event": name, **asdict(event)}, ensure_ascii=False))
