"""What a batch (`harness run DIR --jobs N`) costs beside the runs it is made of.

1. 200 scripted scenarios of 20 steps (19 calculator calls, then the answer), `--jobs 1`:
   the command's wall time against the sum of the single runs' loop time (each scenario
   loaded and run in this process, as `harness run` does) plus one start-up (the wall
   time of `harness run` on one of them). Near 1: the batch adds no per-run start-up.
2. 32 scenarios of 5 calls against a loopback server (tests/benchmarks/busy_server.py, a
   process of its own) that answers every call after 50 ms, `--jobs 8`: the wall time
   against 32 x 5 x 50 ms / 8, the time 8 runs in flight need at the least; given whole,
   and cut where the server saw the first call arrive and the last answer leave (start-up,
   the calls, the end: summary and exit); for the batch path run in a process of its own
   (the same jobs, models and worker; no start-up at all); and for a bare httpx client making the same
   calls (the floor this machine, Python and httpx allow), timed inside its process and
   as a whole process that first imports what the command cannot do without (Python,
   typer, httpx: the whole command's floor).
3. Peak memory (RSS of the command) for 100 and 1,000 scripted scenarios, `--jobs 4`: an
   outcome keeps the summary's facts, not the transcript.

    python tests/benchmarks/batch.py          all three
    python tests/benchmarks/batch.py 2        only part 2 (the loopback server)

Not a test: it prints figures; nothing asserts on time. Best of three for wall times.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).parent.parent.parent
sys.path.insert(0, str(ROOT))

STEP = '"""Thought: step {k}.\\nAction: calculator({k} + 1)\\n""",\n'
ANSWER = '"""Thought: done.\\nFinal Answer: {n}\\n""",\n'


def scripted(folder: Path, count: int, steps: int = 20) -> None:
    folder.mkdir()
    body = "".join(STEP.format(k=k) for k in range(1, steps)) + ANSWER.format(n=steps)
    for i in range(count):
        text = f'question = "Count to {steps}, case {i}."\nmax_steps = {steps}\ncompletions = [\n{body}]\n\n[tools.calculator]\n'
        (folder / f"s{i:04d}.toml").write_text(text, encoding="utf-8")


def wall(*args: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "harness", *args], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        best = min(best, time.perf_counter() - start)
    return best


def loop_time(folder: Path) -> float:
    from harness.record import run_scenario
    from harness.scenario import load_scenario

    total = 0.0
    for path in sorted(folder.glob("*.toml")):
        start = time.perf_counter()
        record = run_scenario(load_scenario(path))
        total += time.perf_counter() - start
        assert record.stop_reason == "final_answer", record.stop_reason
    return total


def peak_rss_mb(*args: str) -> float:
    code = "import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    out = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=ROOT)
    return int(out.stdout) / 1024


def main(parts: set[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        folder = tmp / "scripted"
        scripted(folder, 200)
        start_up = wall("run", str(folder / "s0000.toml"), "--format", "tagged")
        if "1" in parts:
            loops = min(loop_time(folder) for _ in range(3))
            batch = wall("run", str(folder), "--jobs", "1")
            print(f"1. 200 scripted x 20 steps, --jobs 1: {batch:.2f} s; loops {loops:.2f} s + one start-up {start_up:.2f} s = {loops + start_up:.2f} s; ratio {batch / (loops + start_up):.2f}")
        if "2" in parts:
            served(tmp, start_up)
        if "3" in parts:
            for count in (100, 1000):
                many = tmp / f"many{count}"
                scripted(many, count)
                print(f"3. {count} scripted x 20 steps, --jobs 4: peak RSS {peak_rss_mb('run', str(many), '--jobs', '4'):.0f} MB")
    _ = resource  # (the children's peak is read in a child of its own: one figure per command)


def served(tmp: Path, start_up: float) -> None:
    """Part 2: the command against a loopback server that answers every call after 50 ms."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(Path(__file__).parent / "busy_server.py"), str(port), "0.05"], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        url = f"http://127.0.0.1:{port}/v1"
        live = tmp / "live"
        live.mkdir()
        for i in range(32):
            (live / f"l{i:02d}.toml").write_text(f'question = "Count to 5, case {i}."\n\n[tools.calculator]\n', encoding="utf-8")
        os.environ.setdefault("HARNESS_API_KEY", "sk-bench")
        best = (float("inf"),)
        for _ in range(3):  # best of three, each cut where the server saw the first call and the last answer
            start = time.monotonic()  # the server's clock too (one machine)
            subprocess.run([sys.executable, "-m", "harness", "run", str(live), "--jobs", "8", "--model", "openai:m", "--base-url", url], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
            end = time.monotonic()
            seen = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/span").read())
            best = min(best, (end - start, seen["first"] - start, seen["seconds"], end - seen["last"]))
        took, before, span, after = best
        inside = min(float(child("in_process", str(live), url)) for _ in range(3))
        floor = min(float(child("bare_client", url)) for _ in range(3))
        whole_floor = min(process(url) for _ in range(3))
    finally:
        server.terminate()
        server.wait()
    ideal = 32 * 5 * 0.05 / 8
    print(
        f"2. 32 x 5 calls at 50 ms, --jobs 8: {took:.2f} s; ideal {ideal:.2f} s; ratio {took / ideal:.2f}, {(took - start_up) / ideal:.2f} without one start-up;"
        f" of it {before:.2f} s start-up (to the first call's arrival), {span:.2f} s the calls as the server saw them (ratio {span / ideal:.2f}),"
        f" {after:.2f} s the end (the last answer to the exit: summary, exit); after start-up {span + after:.2f} s, ratio {(span + after) / ideal:.2f};"
        f" in process (the batch's own work, no start-up) {inside:.2f} s, ratio {inside / ideal:.2f};"
        f" a bare httpx client making the same calls from 8 threads {floor:.2f} s, ratio {floor / ideal:.2f};"
        f" the same as a whole process that imports typer and httpx first {whole_floor:.2f} s, ratio {whole_floor / ideal:.2f}"
    )


def process(url: str) -> float:
    """The whole command's floor: a process of its own that imports typer and httpx (as
    harness.__main__ does, without httpx's own command line) and makes the bare client's calls."""
    code = (
        "import sys; sys.modules.setdefault('httpx._main', None); import typer, httpx;"
        f" sys.path.insert(0, {str(Path(__file__).parent)!r}); import batch; batch.bare_client(sys.argv[1])"
    )
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, url], check=True, cwd=ROOT)
    return time.perf_counter() - start


def child(function: str, *args: str) -> str:
    """A function of this file run in a process of its own (not beside the server's threads)."""
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import batch; print(batch.{function}(*sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, cwd=ROOT).stdout


def in_process(folder: str, url: str) -> float:
    """The command's batch path without the process's start-up: the same jobs, models and worker."""
    import harness.backends.server  # noqa: F401  (imports are start-up: before the clock)
    import harness.record  # noqa: F401
    from harness.batch import run_all
    from harness.batch_report import Progress
    from harness.cli_batch import gather, worker
    from harness.cli_io import ModelOptions

    start = time.perf_counter()
    jobs = gather([folder])
    model = ModelOptions("openai:m", url).open(connections=8)
    with open(os.devnull, "w") as quiet:  # the progress lines the command writes on stderr
        outcomes, _ = run_all(jobs, worker(None, 0, None, False, Path(folder), model), 8, Progress(quiet, len(jobs)))
    model.close()
    took = time.perf_counter() - start
    assert all(o is not None and o.stop_reason == "final_answer" and o.steps == 5 for o in outcomes)  # 5 calls each
    return took


def bare_client(url: str) -> float:
    """The floor: 8 threads, each 4 runs of 5 calls through one httpx client, the prompt
    growing by each reply as a run's buffer does; no loop, no checks, no record."""
    import threading

    import httpx

    client = httpx.Client(limits=httpx.Limits(max_connections=8, max_keepalive_connections=8))

    def runs() -> None:
        for _ in range(4):
            prompt = "Question: count to 5.\n"
            for _ in range(5):
                body = {"model": "m", "prompt": prompt, "stream": True, "stop": ["Observation:"]}
                with client.stream("POST", f"{url}/completions", json=body) as response:
                    prompt += "".join(json.loads(line[6:])["choices"][0]["text"] for line in response.iter_lines() if line.startswith("data: {"))

    start = time.perf_counter()
    threads = [threading.Thread(target=runs) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


if __name__ == "__main__":
    main(set(sys.argv[1:]) or {"1", "2", "3"})
