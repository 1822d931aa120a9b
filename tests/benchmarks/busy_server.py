"""A server on loopback that answers every completions call after a fixed delay, and does
little else: the model side of tests/benchmarks/batch.py's part 2.

    python tests/benchmarks/busy_server.py PORT DELAY      (prints "ready" once it listens)

It stands in for a serving engine that keeps many calls in flight at once (vLLM, llama.cpp's
server with parallel slots), so that the benchmark measures harness, not the server: one
asyncio loop in a process of its own, keep-alive, each answer written in one piece after
`DELAY` seconds, whatever else is waiting (tests/loopback.py, the tests' server, is a
thread a connection in the tests' own process, built to misbehave on purpose, not to be fast).

Its model counts to 5: the k-th call of a run (k - 1 `Thought: step` lines already in the
prompt) answers `Thought: step k.` and a calculator call, the fifth the final answer 5.
GET answers a model list (a client waiting for the server sees it ready), and GET /span
how long the calls took since the last GET /span, from the first request's arrival to the
last answer sent (the batch as the server saw it: no start-up); any other POST
(llama-cpp-python's /extras/ token count) a 404.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time


def completion(prompt: str) -> bytes:
    k = prompt.count("Thought: step ") + 1
    reply = f"Thought: step {k}.\nAction: calculator({k} + 1)\n" if k < 5 else "Thought: done.\nFinal Answer: 5\n"
    events = ({"choices": [{"index": 0, "text": reply, "finish_reason": None}]}, {"choices": [{"index": 0, "text": "", "finish_reason": "stop"}]})
    return b"".join(b"data: %s\n\n" % json.dumps(e).encode() for e in events) + b"data: [DONE]\n\n"


def response(status: str, kind: str, body: bytes) -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


SPAN: dict[str, float] = {}  # the first arrival and the last answer since the last GET /span


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    try:
        while head := await reader.readuntil(b"\r\n\r\n"):
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            length = next((int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")), 0)
            body = await reader.readexactly(length)
            if method == "GET" and path == "/span":
                span = SPAN.get("last", 0.0) - SPAN.get("first", 0.0)
                times = {"first": SPAN.get("first", 0.0), "last": SPAN.get("last", 0.0)}
                SPAN.clear()
                writer.write(response("200 OK", "application/json", json.dumps({"seconds": span, **times}).encode()))
            elif method == "GET":
                writer.write(response("200 OK", "application/json", b'{"object": "list", "data": [{"id": "m"}]}'))
            elif path.endswith("/completions"):
                SPAN.setdefault("first", time.monotonic())
                await asyncio.sleep(delay)
                writer.write(response("200 OK", "text/event-stream", completion(json.loads(body)["prompt"])))
                SPAN["last"] = time.monotonic()
            else:
                writer.write(response("404 Not Found", "application/json", b'{"detail": "Not Found"}'))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # the client closed its connection
    finally:
        writer.close()


async def main(port: int, delay: float) -> None:
    server = await asyncio.start_server(lambda r, w: serve(r, w, delay), "127.0.0.1", port)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
