"""The run as one JSON object, for programs: the save format's metadata (the same
function writes both, RunRecord.meta), then the buffer as spans and as one text.
`detail` and `model` are always there ("" when the save format leaves them out)."""

from __future__ import annotations

import json

from harness.escape import for_json
from harness.run_record import RunRecord


def to_json(record: RunRecord) -> str:
    meta = record.meta()
    shown = {**meta, "detail": meta.get("detail", ""), "model": meta.get("model", "")}
    shown["spans"] = [{"author": s.author.value, "text": s.text} for s in record.transcript.spans]
    shown["buffer"] = record.transcript.text
    return for_json(json.dumps(shown, ensure_ascii=False, indent=2))
