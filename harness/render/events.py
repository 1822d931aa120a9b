"""Events as JSON Lines: one object per event, in order, as they happen.

    {"event": "round_started", "step": 1, "prompt_chars": 612}

For programs and for snapshot tests of what a run did, not only what it left behind.
Each line is `json.dumps({"event": name, **asdict(event)}, ensure_ascii=False)`, with the
control characters json leaves raw written as \\u escapes (harness.escape.for_json): a
Round inside an event, its Lanes and Actions, become objects of their fields.
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
