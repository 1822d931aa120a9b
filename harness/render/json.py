"""The run as one JSON object, for programs."""

from __future__ import annotations

import json

from harness.escape import for_json
from harness.run_record import RunRecord


def to_json(record: RunRecord) -> str:
    return for_json(json.dumps(
        {
            "stop_reason": record.stop_reason.value,
            "final_answer": record.final_answer,
            "steps": record.steps,
            "cuts": {str(i): c.cut for i, c in enumerate(record.calls, 1) if c.cut},
            "spans": [{"author": s.author.value, "text": s.text} for s in record.transcript.spans],
            "buffer": record.transcript.text,
        },
        ensure_ascii=False,
        indent=2,
    ))
