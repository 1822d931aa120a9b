"""What splitting a chat run into messages costs as the run grows: sent_counts (the run's
messages once and a count per call, what the views use) and, for comparison, the rule
applied afresh to the buffer before every call.

    python tests/benchmarks/messages.py   (PYTHONPATH=. from a checkout)

CPU seconds (time.process_time), the best of 3. Not a test: it prints figures.
"""

from __future__ import annotations

import time

from harness.backends.messages import messages, sent_counts
from harness.transcript import Author, Transcript


def run(n: int) -> list:
    t = Transcript()
    t.append(Author.DEVELOPER, "Question: echo the numbers back.\n" * 20)
    for i in range(n):
        t.append(Author.CODE, f"Thought {i}:")
        t.append(Author.MODEL, f" step {i}\nAction: echo({i})\n")
        t.append(Author.CODE, f"Observation: {i}\n")
    return t.spans


def afresh(spans: list) -> list:
    return [messages(spans[:i]) for i, s in enumerate(spans) if s.author is Author.MODEL]


def best(f, spans) -> float:
    times = []
    for _ in range(3):
        start = time.process_time()
        f(spans)
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    print(f"{'calls':>7} {'sent_counts s':>14} {'afresh s':>9}")
    for n in (500, 1_000, 2_000, 4_000):
        spans = run(n)
        fresh = f"{best(afresh, spans):9.3f}" if n <= 2_000 else f"{'-':>9}"
        print(f"{n:>7,} {best(sent_counts, spans):14.4f} {fresh}")


if __name__ == "__main__":
    main()
