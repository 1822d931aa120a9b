"""The child process that holds a local model (harness.backends.local starts and stops it).

llama.cpp is native code: a crash takes its process with it, and the parent sees the end of
a stream. It reads JSON Lines on stdin and answers on a private copy of fd 1:

    -> {"load": {"path": ..., "n_ctx": ..., "n_threads": ..., "n_threads_batch": ..., "seed": ...}}
    <- {"ready": n_ctx}                               or {"error": "..."}
    -> {"tokenize": TEXT}                             <- {"tokens": [...]}
    -> {"complete": TOKENS, "fresh": BOOL, "stop": [...], "sampling": {...}}   (fresh: cache emptied first)
    <- {"usage": [prompt_tokens, evaluated_tokens]}   once the prompt is read
    <- {"text": "..."} ...                            each piece as it is made
    <- {"done": true}                                 or {"error": "..."}
    -> {"cancel": true}                               (any time during a completion: it stops)

Fd 1 itself goes where fd 2 goes: what llama.cpp prints cannot reach the channel.
"""

from __future__ import annotations

import json
import os
import select
from collections.abc import Sequence
from typing import Any


class Lines:
    """Lines read from a file descriptor with a timeout (select cannot see a file object's read-ahead)."""

    def __init__(self, fd: int, limit: int = 1 << 26) -> None:
        self.fd, self.limit, self.held = fd, limit, b""

    def next(self, seconds: float | None) -> bytes | None:
        """The next line; None if none came within `seconds`; b"" at the end; ValueError past `limit`."""
        while b"\n" not in self.held:
            if len(self.held) > self.limit:
                raise ValueError(f"a line longer than {self.limit:,} bytes")
            if seconds is not None and not select.select([self.fd], [], [], seconds)[0]:
                return None
            more = os.read(self.fd, 65536)
            if not more:
                return b""
            self.held += more
        line, _, self.held = self.held.partition(b"\n")
        return line + b"\n"


def say(message: dict[str, Any]) -> None:
    CHANNEL.write(json.dumps(message) + "\n")
    CHANNEL.flush()


def request(seconds: float | None) -> dict[str, Any] | None:
    """The parent's next request; None if none came within `seconds`; {} at the end."""
    line = REQUESTS.next(seconds)
    if line is None:
        return None
    return json.loads(line) if line else {}


def complete(llm: Any, tokens: list[int], stop: Sequence[str], sampling: dict[str, Any]) -> None:
    # llama.cpp's first eval of a call is the part of the prompt not in its cache.
    evals: list[int] = []
    plain_eval = llm.eval

    def counted_eval(batch: Sequence[int]) -> None:
        evals.append(len(batch))
        plain_eval(batch)

    llm.eval = counted_eval
    chunks = llm.create_completion(tokens, **sampling, stop=list(stop) or None, stream=True)
    counted = False
    try:
        for chunk in chunks:
            if not counted:  # the prompt has been read
                counted = True
                say({"usage": [len(tokens), evals[0] if evals else 0]})
            if text := chunk["choices"][0]["text"]:
                say({"text": text})
            asked = request(0)  # a cancel waiting on stdin (read between two pieces, never blocking)
            if asked is not None and (asked == {} or "cancel" in asked):
                break
    except (ValueError, RuntimeError) as e:
        say({"error": f"llama.cpp failed while generating: {e}"})
        return
    finally:
        chunks.close()
        del llm.eval
    if not counted:
        say({"usage": [len(tokens), evals[0] if evals else 0]})
    say({"done": True})


def main() -> None:
    import llama_cpp

    llm = None
    while asked := request(None):  # {} when harness closes the pipe: the end
        if "load" in asked:
            options = asked["load"]
            try:
                llm = llama_cpp.Llama(model_path=options.pop("path"), verbose=False, **options)
            except (ValueError, RuntimeError) as e:
                say({"error": str(e)})
                return
            say({"ready": llm.n_ctx()})
        elif "tokenize" in asked:
            say({"tokens": llm.tokenize(asked["tokenize"].encode("utf-8"), add_bos=True, special=True)})
        elif "complete" in asked:
            if asked["fresh"]:
                llm.reset()
            complete(llm, asked["complete"], asked["stop"], asked["sampling"])
        # a cancel that came after its completion had ended: nothing to stop


REQUESTS = Lines(0)

if __name__ == "__main__":
    CHANNEL = open(os.dup(1), "w", encoding="utf-8")  # the messages' own copy of fd 1
    os.dup2(2, 1)  # fd 1 then points at fd 2 (the parent's /dev/null)
    os.environ.setdefault("LLAMA_LOG_LEVEL", "0")
    main()
