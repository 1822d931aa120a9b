"""What the buffer costs per step, alone: three appends (the cue, the completion, the
observation) and one ask for the whole text (the prompt the model is sent), as the loop
does, N times. Twice: once when nobody keeps the text it was given, and once when
somebody keeps the last one (LocalModel does, to see whether a prompt extends the last).

    python tests/benchmarks/transcript.py   (PYTHONPATH=. from a checkout)

CPU seconds (time.process_time), the best of 3. Not a test: it prints figures.
"""

from __future__ import annotations

import time

from harness.transcript import Author, Transcript

COMPLETION = "Thought: step 1234\nAction: echo(1234)\n"


def steps(n: int, keep: bool) -> float:
    t = Transcript()
    t.append(Author.DEVELOPER, "Question: echo the numbers back.\n")
    kept = None
    start = time.process_time()
    for _ in range(n):
        t.append(Author.CODE, "")  # a cue (empty in the default dialect)
        prompt = t.text
        if keep:
            kept = prompt  # the last prompt, held on to, as LocalModel holds it
        del prompt
        t.append(Author.MODEL, COMPLETION)
        t.append(Author.CODE, "Observation: ok\n")
    assert kept is None or len(kept) < len(t)
    return time.process_time() - start


def main() -> None:
    print(f"{'N':>7} {'nobody keeps µs/step':>21} {'last kept µs/step':>18}")
    for n in (1_000, 10_000, 100_000):
        free = min(steps(n, False) for _ in range(3))
        kept = min(steps(n, True) for _ in range(3))
        print(f"{n:>7,} {free / n * 1e6:21.2f} {kept / n * 1e6:18.2f}")


if __name__ == "__main__":
    main()
