"""Events as JSON Lines, one object per event as it happens, for programs and tests:

    {"event": "round_started", "step": 1, "prompt_chars": 612}

Control characters json leaves raw are written as \\u escapes (harness.escape.for_json).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict

from harness.escape import for_json
from harness.events import Event


def event_name(event: Event) -> str:
    """RoundStarted -> round_started."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(event).__name__).lower()


def event_line(event: Event) -> str:
    return for_json(json.dumps({"event": event_name(event), **asdict(event)}, ensure_ascii=False))
