"""What the buffer costs per step, alone: three appends (the cue, the completion, the
observation) and the prompt for the model, as the loop makes it, N times. Twice: as the
scripted model reads it (its length: the loop sends it the Transcript), and as a model
that reads text is sent it (`text`, one join of the whole buffer per call, whoever holds
the text given before: the cost of a real backend, which sends all of it anyway).

    python tests/benchmarks/transcript.py   (PYTHONPATH=. from a checkout)

CPU seconds (time.process_time), the best of 3. Not a test: it prints figures.
"""

from __future__ import annotations

import time

from harness.transcript import Author, Transcript

COMPLETION = "Thought: step 1234\nAction: echo(1234)\n"


def steps(n: int, as_text: bool) -> float:
    t = Transcript()
    t.append(Author.DEVELOPER, "Question: echo the numbers back.\n")
    start = time.process_time()
    for _ in range(n):
        t.append(Author.CODE, "")  # a cue (empty in the default dialect)
        prompt = t.text if as_text else len(t)
        del prompt
        t.append(Author.MODEL, COMPLETION)
        t.append(Author.CODE, "Observation: ok\n")
    return time.process_time() - start


def main() -> None:
    print(f"{'N':>7} {'by length µs/step':>18} {'as text µs/step':>16}")
    for n in (1_000, 10_000, 100_000):
        length = min(steps(n, False) for _ in range(3))
        text = min(steps(n, True) for _ in range(3)) if n <= 10_000 else float("nan")  # quadratic: 100k would take minutes
        print(f"{n:>7,} {length / n * 1e6:18.2f} {text / n * 1e6:16.2f}")


if __name__ == "__main__":
    main()
