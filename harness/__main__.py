"""`python -m harness` and the `harness` command start here.

Nothing is imported before the guard, so a Ctrl-C at any moment of start-up, even while
the CLI's own modules load, is one line and exit code 130, never a traceback.
"""

import gc
import os
import sys


def main() -> None:
    # httpx loads its own command line (click, rich, pygments: ~60 ms) whenever click is
    # installed, which harness never calls; marked missing, httpx's own stub stands in.
    sys.modules.setdefault("httpx._main", None)
    for name, mode in (("stdin", "r"), ("stdout", "w"), ("stderr", "w")):
        if getattr(sys, name) is None:  # closed by the caller (`harness run x >&-`): read as /dev/null
            setattr(sys, name, open(os.devnull, mode, encoding="utf-8"))
    own_stdout()
    try:
        # What the CLI's import makes (modules, classes, typer's objects) lives to the end of the
        # process: collecting it finds nothing, so no collection runs while it loads, and then it
        # is moved out of the collector's sight (gc.freeze), so that no collection during the
        # command walks it again (with the freeze at exit below: 293M -> 258M for `--help`).
        gc.disable()
        try:
            from harness import captured
            from harness.cli import main as cli

            captured.contain()  # the command: every thread but harness's own is a tool's
        finally:
            gc.freeze()
            gc.enable()
        try:
            cli()
        except SystemExit as done:
            without_waiting(done.code)
            raise
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        if (captured := sys.modules.get("harness.captured")) is not None and captured.still_running():
            end_now(130)  # a tool's thread would hold the exit: not after a Ctrl-C
        sys.exit(130)
    finally:
        # At exit the collector would walk every object once more, to free what the
        # process is dropping anyway (~10 ms); frozen, it skips them. Files are closed by
        # their `with`, and atexit hooks still run.
        gc.freeze()


def without_waiting(code: object) -> None:
    """A thread a tool started and left running would keep the command from ever ending (a CI
    job that hangs). The process ends as usual (atexit hooks, a pool's workers let go); if
    such a thread still runs GRACE seconds on, it ends without it, saying so on stderr."""
    import threading

    from harness import captured

    if not captured.still_running():
        return

    import atexit
    import signal

    signal.signal(signal.SIGINT, lambda *_: (print("interrupted", file=sys.stderr), end_now(130)))  # Ctrl-C while it waits: at once

    def end() -> None:
        captured.ours()  # (this thread's note goes to the real stderr)
        if left := len(captured.still_running()):  # (they may have ended as it fired: then exit goes on)
            print(f"note: {left} thread(s) a tool started still ran {GRACE:g} s after the run; harness ended without them", file=sys.stderr)
            end_now(code)

    timer = threading.Timer(GRACE, end)
    timer.daemon = True  # (it never keeps the process itself)
    timer.start()
    atexit.register(timer.cancel)  # the threads ended, exit's hooks begin: nothing cuts them short


def end_now(code: object) -> None:
    """End the process at once, what was written flushed (atexit hooks do not run)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            getattr(stream, "real", stream).flush()
        except (OSError, ValueError):  # a reader gone, a stream closed: nothing more to say
            pass
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)


GRACE = 2.0  # seconds a tool's thread may go on after the run before the command ends without it


def own_stdout() -> None:
    """harness's output (a transcript, JSON) goes through a copy of file descriptor 1, and fd 1
    itself is pointed at /dev/null: what a tool writes there without Python's sys.stdout
    (a subprocess it starts, os.write(1, ...)) goes nowhere, never into the middle of it."""
    try:
        sys.stdout.flush()
        if sys.stdout.fileno() != 1:
            return
        mine = os.dup(1)  # (not inherited by a tool's subprocess)
    except (OSError, ValueError, AttributeError):  # fd 1 closed, or stdout is no file
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    import io

    old = sys.stdout  # buffered as it was: `python -u` and PYTHONUNBUFFERED leave its bytes unbuffered
    binary = open(mine, "wb", buffering=0 if isinstance(getattr(old, "buffer", None), io.RawIOBase) else -1)
    sys.stdout = io.TextIOWrapper(binary, old.encoding, old.errors, line_buffering=old.line_buffering, write_through=old.write_through)


if __name__ == "__main__":
    main()
