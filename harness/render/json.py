"""The run as one JSON object, for programs."""

from __future__ import annotations

import json
from typing import Any

from harness.transcript import Transcript


def to_json(transcript: Transcript, info: dict[str, Any]) -> str:
    return json.dumps(
        {
            "stop_reason": info.get("stop_reason"),
            "final_answer": info.get("final_answer"),
            "steps": info.get("steps"),
            "cuts": info.get("cuts", {}),
            "spans": [{"author": s.author.value, "text": s.text} for s in transcript.spans],
            "buffer": transcript.text,
        },
        ensure_ascii=False,
        indent=2,
    )
