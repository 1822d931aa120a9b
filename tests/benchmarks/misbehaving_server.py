"""Each misbehaving-server case through the command: wall time and peak memory of the process.

    python tests/benchmarks/misbehaving_server.py            # the default bounds
    python tests/benchmarks/misbehaving_server.py --tight    # --max-seconds 3 --max-chars 20000, as the tests

The cases are tests/test_misbehaving_server.py's (a stream that never ends, one byte a
second, one endless line, fields of the wrong shape, a gzip header that lies, ...),
served by tests/loopback.py on 127.0.0.1. With the default bounds a runaway stream reads
100,000 characters and a stalled one waits 300 s, so the slow cases are left out unless
`--slow` is given. Peak memory is the child's own (wait4), start-up included.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.loopback import FakeServer  # noqa: E402
from tests.test_misbehaving_server import BOUNDS, CASES, GOOD_START, Reply, sse, text  # noqa: E402

SLOW = {"one byte a second", "a comment stream that never ends"}  # bounded by --max-seconds only


def timed(args: list[str]) -> tuple[float, float, int]:
    env = {**os.environ, "HARNESS_API_KEY": "sk-bench-0123456789", "NO_COLOR": "1"}
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "harness", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    return time.perf_counter() - start, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tight", action="store_true", help="the tests' bounds: " + " ".join(BOUNDS))
    parser.add_argument("--slow", action="store_true", help="also the cases that only the time limit ends")
    args = parser.parse_args()
    cases = dict(CASES)
    cases["a runaway stream, default bounds"] = (Reply(chunks=GOOD_START, repeat=sse(text("word " * 20))[0]), "")
    print(f"{'case':<36} {'exit':>4} {'seconds':>8} {'peak MB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (reply, _) in cases.items():
            if name in SLOW and not (args.tight or args.slow):
                continue
            server = FakeServer()
            server.reply = reply
            try:
                saved = Path(tmp) / "run.txt"
                bounds = BOUNDS if args.tight and "default" not in name else []
                command = ["run", "calculator", "--model", "openai:m", "--base-url", server.url, "--save", str(saved), "-f", "tagged", *bounds]
                seconds, peak, code = timed(command)
            finally:
                server.close()
            print(f"{name:<36} {code:>4} {seconds:>8.2f} {peak:>8.1f}")


if __name__ == "__main__":
    main()
