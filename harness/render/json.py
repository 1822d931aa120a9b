"""The run for programs: one JSON object (`--format json`: the save format's metadata, with
`detail` and `model` always there, then the buffer as spans and as one text), or each event
as one JSON Lines object as it happens (`--format events`):

    {"event": "round_started", "step": 1, "prompt_chars": 612}
"""

from __future__ import annotations

import json
import re

from harness.escape import for_json
from harness.events import Event, plain
from harness.run_record import RunRecord


def to_json(record: RunRecord) -> str:
    meta = record.meta()
    shown = {**meta, "detail": meta.get("detail", ""), "model": meta.get("model", "")}
    shown["spans"] = [{"author": s.author.value, "text": s.text} for s in record.transcript.spans]
    shown["buffer"] = record.transcript.text
    return for_json(json.dumps(shown, ensure_ascii=False, indent=2))


def event_line(event: Event) -> str:
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", type(event).__name__).lower()  # RoundStarted -> round_started
    return for_json(json.dumps({"event": name, **plain(event)}, ensure_ascii=False))
