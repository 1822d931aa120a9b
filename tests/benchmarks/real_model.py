"""Time per call and tokens per second of a real model, and what its prefix cache saves.

Plays a ReAct-shaped run of N calls against one backend: the ChatML prompt
(prompts/chatml.txt) with the live-distance question, then per call the completion
(stopped at "Observation:") and a code-written observation appended, as the loop does.
It prints, per call, the seconds to the first chunk and in all, the characters and the
prompt tokens sent and evaluated (where the backend reports them), the chunks streamed
(llama.cpp sends one per generated token) and chunks per second after the first, and the totals:

    python tests/benchmarks/real_model.py --local                         # SmolLM2, its server started by harness
    python tests/benchmarks/real_model.py --local --threads 1             # one thread
    python tests/benchmarks/real_model.py --server http://127.0.0.1:8080/v1

Start a server with `python -m llama_cpp.server --model GGUF --port 8080 --n_ctx 4096`.
Not a test: it prints figures; nothing asserts on time. A 135M model does not follow the
format; the run is about cost, not answers.
"""

from __future__ import annotations

import argparse
import string
import time
from pathlib import Path

from harness.model import Model, TokenUsage

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "A train runs 2.5 hours at 84 km/h, then 1.5 hours at 62 km/h. How far does it go in total?"
TOOLS = "calculator(expression): arithmetic on numbers"


def play(model: Model, calls: int) -> None:
    template = string.Template((ROOT / "prompts" / "chatml.txt").read_text(encoding="utf-8"))
    buffer = template.substitute(question=QUESTION, tools=TOOLS)
    sent = evaluated = chars = generated_chars = streamed = 0
    decoding = 0.0
    start_all = time.perf_counter()
    print(f"{'call':>4} {'first s':>8} {'total s':>8} {'prompt chars':>12} {'tokens':>7} {'evaluated':>9} {'out chars':>9} {'chunks':>6} {'chunks/s':>8}")
    for call in range(1, calls + 1):
        start, first, text, counts = time.perf_counter(), None, [], None
        for chunk in model.stream(buffer, ("Observation:",)):
            if isinstance(chunk, TokenUsage):
                counts = chunk
                continue
            first = first or time.perf_counter() - start
            text.append(chunk)
        took = time.perf_counter() - start
        completion = "".join(text)
        tokens = counts.prompt_tokens if counts else None
        done = counts.evaluated_tokens if counts else None
        after_first = took - (first or took)
        rate = f"{(len(text) - 1) / after_first:.1f}" if len(text) > 1 and after_first > 0 else "-"
        print(
            f"{call:>4} {first or 0:>8.2f} {took:>8.2f} {len(buffer):>12} {tokens or '-':>7} "
            f"{done if done is not None else '-':>9} {len(completion):>9} {len(text):>6} {rate:>8}"
        )
        streamed += max(len(text) - 1, 0)
        decoding += after_first
        chars += len(buffer)
        sent += tokens or 0
        evaluated += done or 0
        generated_chars += len(completion)
        buffer += completion + ("" if completion.endswith("\n") else "\n") + f"Observation: {call * 101}\n"
    total = time.perf_counter() - start_all
    print(f"\n{calls} calls in {total:.1f} s ({total / calls:.2f} s per call); prompt characters sent: {chars}")
    if sent:
        print(f"prompt tokens sent: {sent}, evaluated: {evaluated} (the rest came from the cache)")
    else:
        print("prompt tokens: not reported by this backend")
    print(f"completion characters: {generated_chars}; chunks after the first of each call: {streamed} in {decoding:.1f} s ({streamed / max(decoding, 1e-9):.1f} per second)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--local", nargs="?", const="", metavar="GGUF", help="llama.cpp's server started by harness (default: SmolLM2)")
    where.add_argument("--server", metavar="URL", help="an OpenAI-compatible server's base URL")
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    if args.server:
        from harness.backends.server import ServerModel

        model: Model = ServerModel("smollm2", args.server, max_tokens=args.max_tokens)
    else:
        from harness.backends.local import LocalModel

        model = LocalModel(args.local or None, n_threads=args.threads, max_tokens=args.max_tokens)
    play(model, args.calls)


if __name__ == "__main__":
    main()
