"""Throughput of the stop scanner, and how its time grows with the input.

Feeds N MB of text through StopScanner in 1-character chunks and in 4 KB chunks. The
text is full of near misses ("Obs", "Observat", "Observation" without its colon), so the
scanner holds text back and lets it go all the time, and holds no full stop string, so
every byte is scanned. Run it twice the size to see whether the time doubles:

    python tests/benchmarks/stop_scanner.py                        # 1 B chunks: 2 and 4 MB; 4 KB chunks: 10 and 20 MB
    python tests/benchmarks/stop_scanner.py --mb 1 2 --mb-1 1 2    # a quick look

Times are CPU seconds of this process (time.process_time), the best of three runs, so a
busy machine does not pass its other work off as the scanner's.

Not a test: it prints figures; nothing asserts on time.
"""

from __future__ import annotations

import argparse
import random
import time

from harness.stop import StopScanner

STOPS = ["Observation:", "\nObservation 1:"]
WORDS = ["Thought:", "the", "quota", "Obs", "Observat", "Observation", "is", "full\n", "Action:", "O", "\nObs"]


def text_of(megabytes: int) -> str:
    rng = random.Random(7)
    size = megabytes * 1_000_000
    pieces, length = [], 0
    while length < size:
        word = rng.choice(WORDS) + " "
        pieces.append(word)
        length += len(word)
    return "".join(pieces)[:size]


def run(text: str, chunk: int, repeat: int) -> tuple[float, int]:
    """The best of `repeat` runs (the least disturbed by the rest of the machine)."""
    best = float("inf")
    for _ in range(repeat):
        scanner = StopScanner(STOPS)
        start = time.process_time()
        shown = 0
        for i in range(0, len(text), chunk):
            shown += len(scanner.feed(text[i : i + chunk]))
        shown += len(scanner.finish())
        best = min(best, time.process_time() - start)
    return best, shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, nargs="+", default=[10, 20], help="input sizes in MB, 4 KB chunks")
    parser.add_argument("--mb-1", type=int, nargs="+", default=[2, 4], help="input sizes in MB, 1-character chunks")
    args = parser.parse_args()
    for chunk, sizes in ((1, args.mb_1), (4096, args.mb)):
        times = []
        for mb in sizes:
            text = text_of(mb)
            seconds, shown = run(text, chunk, repeat=3 if chunk == 1 else 5)
            assert shown == len(text), "no stop string in the input: everything must come out"
            times.append(seconds)
            print(f"chunk {chunk:>5} B  {mb:>3} MB  {seconds:8.2f} s  {mb / seconds:8.2f} MB/s")
        pairs = list(zip(sizes, times))
        for (a, ta), (b, tb) in zip(pairs, pairs[1:]):
            print(f"chunk {chunk:>5} B  {b} MB / {a} MB: input x{b / a:.1f}, time x{tb / ta:.2f}")


if __name__ == "__main__":
    main()
