"""The child process that holds a local model (harness.backends.local starts and stops it).

llama.cpp is native code: when it crashes (a segmentation fault, an illegal instruction),
it takes its process with it. So it runs here, in a process of its own, and harness's
process only reads what it says; a crash is then the end of a stream, which the parent
turns into a ModelError (the run ends as model_error, saved and replayable).

It speaks JSON Lines on stdin and stdout, one request at a time:

    -> {"load": {"path": ..., "n_ctx": ..., "n_threads": ..., "n_threads_batch": ..., "seed": ...}}
    <- {"ready": n_ctx}                               or {"error": "..."}
    -> {"tokenize": TEXT}                             <- {"tokens": [...]}
    -> {"reset": true}                                <- {"done": true}
    -> {"complete": TOKENS, "stop": [...], "sampling": {...}}
    <- {"usage": [prompt_tokens, evaluated_tokens]}   once the prompt is read
    <- {"text": "..."} ...                            each piece as it is made
    <- {"done": true}                                 or {"error": "..."}
    -> {"cancel": true}                               (any time during a completion: it stops)

It never prints anything else on stdout; llama.cpp's own logging is off.
"""

from __future__ import annotations

import json
import os
import select
import sys
from collections.abc import Sequence
from typing import Any


class Lines:
    """JSON Lines read from a file descriptor, without blocking when asked not to. (A file
    object's readline reads ahead: a line already in its buffer is invisible to select, so
    a reader that selects and then reads a line could wait for ever on one that has come.)"""

    def __init__(self, fd: int) -> None:
        self.fd, self.held = fd, b""

    def next(self, seconds: float | None) -> dict[str, Any] | None:
        """The next message; None if none came within `seconds` (None: wait); {} at the end."""
        while b"\n" not in self.held:
            if seconds is not None and not select.select([self.fd], [], [], seconds)[0]:
                return None
            more = os.read(self.fd, 65536)
            if not more:
                return {}
            self.held += more
        line, self.held = self.held.split(b"\n", 1)
        return json.loads(line)


def say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


REQUESTS = Lines(0)


def canceled() -> bool:
    """A cancel waiting on stdin (read between two pieces, never blocking)."""
    request = REQUESTS.next(0)
    return request is not None and (request == {} or "cancel" in request)


def complete(llm: Any, tokens: list[int], stop: Sequence[str], sampling: dict[str, Any]) -> None:
    # Counted, not guessed: llama.cpp's first eval of a call is the part of the prompt that
    # was not in its cache; every later one is a token it generated.
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
            if canceled():
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
    while request := REQUESTS.next(None):  # {} when harness closes the pipe: the end
        if "load" in request:
            options = request["load"]
            try:
                llm = llama_cpp.Llama(model_path=options.pop("path"), verbose=False, **options)
            except (ValueError, RuntimeError) as e:
                say({"error": str(e)})
                return
            say({"ready": llm.n_ctx()})
        elif "tokenize" in request:
            say({"tokens": llm.tokenize(request["tokenize"].encode("utf-8"), add_bos=True, special=True)})
        elif "reset" in request:
            llm.reset()
            say({"done": True})
        elif "complete" in request:
            complete(llm, request["complete"], request["stop"], request["sampling"])
        # a cancel that came after its completion had ended: nothing to stop


if __name__ == "__main__":
    os.environ.setdefault("LLAMA_LOG_LEVEL", "0")
    main()
