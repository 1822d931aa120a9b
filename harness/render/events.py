"""Events as JSON Lines: one object per event, in order, as they happen.

    {"event": "round_started", "step": 1, "prompt_chars": 612}

For programs and for snapshot tests of what a run did, not only what it left behind.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict

from harness.events import Event


def event_line(event: Event) -> str:
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", type(event).__name__).lower()  # RoundStarted -> round_started
    return json.dumps({"event": name, **asdict(event)}, ensure_ascii=False)
