"""`python -m harness` and the `harness` command start here: a Ctrl-C is one line and exit
code 130, never a traceback; output goes through harness.captured's channel; and the
process ends with os._exit once that is flushed, so no thread or atexit hook a tool left
can hold it open or print after it."""

import os
import sys
from _signal import SIG_IGN, SIGINT, signal  # (the C module: no enum at start-up)


def main() -> None:
    os._exit(command())


def command() -> int:
    """The command line run to its end: its exit code, harness's output all written."""
    hook, sys.unraisablehook = sys.unraisablehook, _unraisable(sys.unraisablehook)
    try:
        try:
            code = _run()
        finally:
            signal(SIGINT, SIG_IGN)  # the command is ending: another Ctrl-C changes nothing
    except BaseException as e:
        from harness.errors import made_of_ctrl_c

        if not made_of_ctrl_c(e):
            raise
        print("interrupted", file=sys.stderr)
        code = 130
    finally:
        sys.unraisablehook = hook
    from harness import captured

    captured.flush()
    return code


def _run() -> int:
    # httpx loads its own command line (click, rich, pygments) whenever click is installed,
    # which harness never calls; marked missing, httpx's own stub stands in.
    sys.modules.setdefault("httpx._main", None)
    for name, mode in (("stdin", "r"), ("stdout", "w"), ("stderr", "w")):
        if getattr(sys, name) is None:  # closed by the caller (`harness run x >&-`): read as /dev/null
            setattr(sys, name, open(os.devnull, mode, encoding="utf-8"))
    from harness import captured

    captured.contain()
    from harness.cli import app

    return app(standalone_mode=False)  # the exit code, every error already said in one line (harness.cli)


def _unraisable(hook):
    """A Ctrl-C that lands in a finalizer (a `__del__`, of a generator or a file, say)
    cannot end the command from there, and Python would print it as a traceback: another thread
    hands it back to the main thread, which ends the command where it is next (interrupted, 130)."""

    def unraisable(what) -> None:
        if isinstance(what.exc_value, KeyboardInterrupt):
            import _thread
            import threading

            threading.Timer(0.001, _thread.interrupt_main).start()  # (once this has returned: from here, it would land here)
        else:
            hook(what)

    return unraisable


if __name__ == "__main__":
    main()
