"""How the governed dialect's prefix rule costs with the length of a reply's first line.

A reply that does not begin with "Thought:" is read to the end of its first line, which is
then quoted; a live server streams it in small pieces. Feeds first lines of N characters,
without a newline until the end, 8 characters at a time, through the Governor, and prints
the CPU seconds (time.process_time, the best of three): twice the line should take about
twice the time.

    python tests/benchmarks/first_line.py               # 1 and 2 million characters
    python tests/benchmarks/first_line.py 250000 500000

Not a test: it prints figures; nothing asserts on time.
"""

from __future__ import annotations

import sys
import time

from harness.dialects import GovernedDialect
from harness.governor import Governor


def seconds(n: int, chunk: int = 8) -> float:
    best = float("inf")
    for _ in range(3):
        text, governor = "Sure " + "x" * n + "\n", Governor(GovernedDialect())
        started = time.process_time()
        for i in range(0, len(text), chunk):
            governor.feed(text[i : i + chunk])
        best = min(best, time.process_time() - started)
        assert governor.prefix_rejected and len(governor.rejected) == len(text)
    return best


if __name__ == "__main__":
    for n in [int(a) for a in sys.argv[1:]] or [1_000_000, 2_000_000]:
        print(f"{n:>10,} characters: {seconds(n):6.2f} s", flush=True)
