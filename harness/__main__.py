"""`python -m harness` and the `harness` command start here: a Ctrl-C is one line and exit
code 130, never a traceback; output goes through harness.captured's channel; and the
process ends with os._exit once that is flushed, so no thread or atexit hook a tool left
can hold it open or print after it."""

import os
import sys


def main() -> None:
    os._exit(command())


def command() -> int:
    """The command line run to its end: its exit code, harness's output all written."""
    try:
        try:
            code = _run()
        finally:
            _ignore_ctrl_c()  # the command is ending: another Ctrl-C changes nothing
    except KeyboardInterrupt:
        _ignore_ctrl_c()
        print("interrupted", file=sys.stderr)
        code = 130
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


def _ignore_ctrl_c() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":
    main()
